"""Turn actions: enqueue and cancel (PROTOCOL §5, §7, §8.2, §10.3); the lanes' claim, progress and
finish are in ``turns.lifecycle``.

``check_*`` functions validate and raise ``GroupXError``; ``do_*`` functions mutate and must be
called inside ``transaction.atomic()`` (every write is BEGIN IMMEDIATE, so the caller holds the
database's write lock for the whole command and the checks cannot go stale).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from groupx_site.core.errors import GroupXError, invalid
from groupx_site.core.ids import WEB_BINDING_ID
from groupx_site.core.ids import turn_id as new_turn_id
from rooms import commands, events, validation
from rooms.models import Event
from setup_wizard.config import ResolvedAgent
from turns import lifecycle, wakeups
from turns import sql as turn_sql
from turns.models import Turn
from turns.states import ACTIVE_STATUSES, QUEUED


@dataclass(frozen=True)
class QueuedTurn:
    target: str
    turn_id: str
    status: str
    queue_position: int
    active_turn_id: str | None

    def as_rest(self) -> dict[str, Any]:
        return {"target": self.target, "turnId": self.turn_id, "status": self.status, "transport": "structured"}


def check_queue_capacity(agents: list[ResolvedAgent], limit: int) -> dict[str, int]:
    """QUEUE_CAPACITY_REACHED when a target already holds ``limit`` unfinished turns. Returns each
    target's count of unfinished turns, which ``do_enqueue_turns`` reuses as its queue position."""
    # One fixed statement for all targets (turns/sql.py), in the targets' order.
    found = turn_sql.active_turn_counts([agent.actor_id for agent in agents])
    counts = {agent.actor_id: found.get(agent.actor_id, 0) for agent in agents}
    full = [actor_id for actor_id, count in counts.items() if count + 1 > limit]
    if full:
        raise GroupXError(
            "QUEUE_CAPACITY_REACHED",
            f"the queue of {', '.join(full)} is full ({limit} unfinished turns)",
            details={"targets": full, "limit": limit},
        )
    return counts


def queue_metadata(target_actor_id: str, enqueue_seq: int, ahead_count: int | None = None) -> tuple[int, str | None]:
    """(turns ahead that are not terminal, the target's in-flight turn ahead of this one).
    ``ahead_count``: that number when the caller already counted it."""
    if ahead_count == 0:
        return 0, None  # nothing unfinished ahead, so nothing in flight either
    active = turn_sql.in_flight_ahead(target_actor_id, enqueue_seq)
    if ahead_count is None:
        ahead_count = Turn.objects.filter(
            target_actor_id=target_actor_id, status__in=ACTIVE_STATUSES, enqueue_seq__lt=enqueue_seq
        ).count()
    return ahead_count, active


def do_enqueue_turns(
    *,
    source_event: Event,
    agents: list[ResolvedAgent],
    command_type: str,
    hop_count: int = 0,
    parent_turn: Turn | None = None,
    active_counts: dict[str, int] | None = None,
    causation_id: str | None = None,
) -> list[QueuedTurn]:
    """One ``turn.queued`` event and one Turn per target, in sorted target order.

    ``causation_id``: what caused the Turns when it is not their source event (a steer, PROTOCOL §6.7).

    ``active_counts``: what ``check_queue_capacity`` returned in this same transaction. Every
    unfinished turn of a target was enqueued before the one written here (seqs only grow), so that
    count is its queue position and need not be counted again; each count serves its target once.
    """
    counts = dict(active_counts or {})
    queued = []
    for agent in sorted(agents, key=lambda a: a.actor_id):
        turn_id = new_turn_id()
        queued_event = events.turn_queued(
            turn_id=turn_id,
            source_event=source_event,
            target_actor_id=agent.actor_id,
            adapter_id=agent.driver,
            hop_count=hop_count,
            causation_id=causation_id,
        )
        # The row Turn.objects.create would write, as a fixed INSERT (turns/sql.py).
        turn_sql.insert_turn(
            turn_id=turn_id,
            source_event_id=source_event.event_id,
            target_actor_id=agent.actor_id,
            adapter_id=agent.driver,
            command_type=command_type,
            parent_turn_id=parent_turn.turn_id if parent_turn is not None else None,
            correlation_id=source_event.correlation_id,
            root_correlation_id=source_event.root_correlation_id,
            hop_count=hop_count,
            queued_event_id=queued_event.event_id,
            enqueue_seq=queued_event.seq,
            status=QUEUED,
            queued_at=timezone.now(),
        )
        position, active = queue_metadata(agent.actor_id, queued_event.seq, counts.pop(agent.actor_id, None))
        queued.append(QueuedTurn(agent.actor_id, turn_id, QUEUED, position, active))
    wakeups.new_work_on_commit(turn.target for turn in queued)
    return queued


# ---- cancel (POST /api/turns/{turnId}/cancel) ----------------------------------------------------

TURN_ID = re.compile(r"^turn_[A-Za-z0-9]{1,64}$")


def check_cancel_body(payload: Any) -> str:
    """The clientCommandId of a well-formed cancel body (the turnId is checked after it)."""
    payload = validation.reject_sender_fields(payload)
    validation.reject_unknown_keys(payload, {"clientCommandId"})
    return validation.client_command_id(payload)


def cancel_turn(turn_id: str, payload: Any) -> dict[str, Any]:
    return accept_cancel(turn_id, check_cancel_body(payload))


def accept_cancel(turn_id: str, client_command_id: str) -> dict[str, Any]:
    """Cancel with a checked body (the REST view's body model ran ``check_cancel_body``)."""
    if not TURN_ID.match(turn_id):
        raise invalid("turnId is malformed")

    def run() -> dict[str, Any]:
        if not Turn.objects.filter(turn_id=turn_id).exists():
            raise GroupXError("UNKNOWN_TARGET", f"no turn {turn_id}", details={"unknownTargets": [turn_id]})
        accepted, status = lifecycle.request_cancel(turn_id)
        return {"turnId": turn_id, "accepted": accepted, "status": status, "transport": "structured"}

    return commands.run_once(
        binding_id=WEB_BINDING_ID,
        client_command_id=client_command_id,
        command_type="web.cancel",
        canonical={"turnId": turn_id},
        run=run,
    )

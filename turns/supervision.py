"""Supervision pairing (FEATURES §12, PROTOCOL §4.3): one command pairs a task's workers with
observers, and the lookups the watch and steer tools stand on (docs/DECISIONS.md D40).

- ``check_supervision``: the body only (``INVALID_ENVELOPE``): shape, 1..4 unique agent ids, the
  mode, no observer also in ``to``.
- ``check_pair``: inside the command, against the live roster: each observer an enabled agent
  (404 ``UNKNOWN_TARGET``, as an unknown or disabled worker is), not the caller, not a worker
  ``@all`` chose (``SUPERVISION_PAIR_INVALID``).
- ``do_pair``: after the task source and the workers' ``turn.queued``, in the same transaction and
  seq order: the watch brief, the observers' ``turn.queued``, ``supervision.paired``, the pair rows.

A pair's roles exist only in its rows (``supervision_pair_turns``); an agent is a worker in one
command and an observer in another.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from groupx_site.core.errors import GroupXError, invalid
from groupx_site.core.ids import new_id
from memory.transcript import WATCH_BRIEF_KIND
from rooms import event_types, events, validation
from rooms.models import ROOM_ID, Event
from setup_wizard import roster
from setup_wizard.config import ResolvedAgent
from turns.actions import QueuedTurn, do_enqueue_turns
from turns.models import SupervisionPair, SupervisionPairTurn, Turn
from turns.states import DISPATCHING, QUEUED, RUNNING

MODE = "live_steer"
MAX_OBSERVERS = 4
WORKER_AND_OBSERVER = "an agent is either a worker (to) or an observer, not both"  # a rule the schema states in words
WATCH_COMMAND_TYPE = "supervision.watch"  # an observer's Turn (memory/dated_sources.py skips it)
STEER_COMMAND_TYPE = "supervision.steer"  # a worker Turn a steer queued
ASSISTANT_ACTOR_ID = "user:assistant"
BRIEF_EXCERPT = 8_000
PAIR_FIELDS = {"observers", "mode"}


@dataclass(frozen=True)
class Supervision:
    observers: tuple[str, ...]  # sorted
    mode: str = MODE

    def canonical(self) -> dict[str, Any]:
        # The receipt hashes the observers, never the brief text GroupX writes (FEATURES §12).
        return {"observers": list(self.observers), "mode": self.mode}


def pair_invalid(message: str, **details: Any) -> GroupXError:
    return GroupXError("SUPERVISION_PAIR_INVALID", message, details=details or None)


def check_supervision(payload: dict[str, Any], to: list[str]) -> Supervision | None:
    """The ``supervision`` field of a send, an ask or a web post; None when absent (or null)."""
    value = payload.get("supervision")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise invalid("supervision must be an object {observers, mode}")
    validation.reject_unknown_keys(value, PAIR_FIELDS)
    if value.get("mode") != MODE:
        raise invalid(f'supervision.mode must be "{MODE}"')
    observers = value.get("observers")
    if not isinstance(observers, list) or not 1 <= len(observers) <= MAX_OBSERVERS:
        raise invalid(f"supervision.observers must list 1 to {MAX_OBSERVERS} agent ids")
    if ASSISTANT_ACTOR_ID in observers:
        raise pair_invalid("the room assistant is never an observer")
    malformed = [str(o) for o in observers if not isinstance(o, str) or not validation.AGENT_ACTOR_RE.match(o)]
    if malformed:
        raise invalid(
            "supervision.observers must hold agent actor ids such as agent:codex", malformedObservers=malformed
        )
    if len(set(observers)) != len(observers):
        raise invalid("supervision.observers must not repeat an agent")
    overlap = sorted(set(observers) & set(to))
    if overlap:
        raise invalid(WORKER_AND_OBSERVER, overlappingActors=overlap)
    return Supervision(tuple(sorted(observers)))


def check_pair(
    supervision: Supervision, workers: list[ResolvedAgent], *, sender_id: str | None = None
) -> list[ResolvedAgent]:
    """The observers as live agents, checked against the workers the command resolved."""
    if sender_id in supervision.observers:
        raise pair_invalid("the calling agent cannot observe its own task", overlappingActors=[sender_id])
    unknown = [o for o in supervision.observers if roster.live_agent(o) is None]
    if unknown:  # resolved like a worker: an observer that is not a live agent is an unknown target
        raise GroupXError(
            "UNKNOWN_TARGET",
            f"not an enabled agent of this room: {', '.join(unknown)}",
            details={"unknownTargets": unknown},
        )
    overlap = sorted(set(supervision.observers) & {w.actor_id for w in workers})
    if overlap:  # @all resolved to every agent, observers included
        raise pair_invalid("an observer cannot also be a worker of the same task", overlappingActors=overlap)
    return [
        agent for o in supervision.observers if (agent := roster.live_agent(o)) is not None
    ]  # all live: checked above


def brief_text(pair_id: str, source: Event, workers: list[QueuedTurn]) -> str:
    """The observers' current message: a template around the task's excerpt, never the task itself."""
    task = str((source.body or {}).get("content", ""))
    excerpt = task[:BRIEF_EXCERPT] + (" …" if len(task) > BRIEF_EXCERPT else "")
    lines = "\n".join(f"- {w.target} (turn {w.turn_id})" for w in workers)
    return (
        f"Supervision watch ({MODE}, pair {pair_id}). You observe this task; you do not do it.\n"
        f"Workers:\n{lines}\n"
        "Follow them with watch; steer (a public reason, action nudge or interrupt) to redirect a worker. "
        f"Task, from {source.actor_id} (event {source.event_id}):\n{excerpt}"
    )


def do_pair(
    *,
    source: Event,
    workers: list[QueuedTurn],
    observers: list[ResolvedAgent],
    hop_count: int = 0,
    parent_turn: Turn | None = None,
    active_counts: dict[str, int] | None = None,
) -> dict[str, Any]:
    """Write the pair after the task source and its workers' ``turn.queued`` (same transaction);
    returns what the 202 (or the tool result) adds: ``watchTurns``, ``watchEventId``, ``pairEventId``."""
    pair_id = new_id("pair")
    worker_refs = [{"actorId": w.target, "turnId": w.turn_id} for w in workers]
    brief = events.message_created(
        actor=events.SYSTEM,
        content=brief_text(pair_id, source, workers),
        to=[o.actor_id for o in observers],
        correlation_id=source.correlation_id,
        root_correlation_id=source.root_correlation_id,
        source_kind="supervision",
        causation_id=source.event_id,
        extra_body={
            "kind": WATCH_BRIEF_KIND,
            "pairId": pair_id,
            "sourceEventId": source.event_id,
            "workers": worker_refs,
        },
    )
    watchers = do_enqueue_turns(
        source_event=brief,
        agents=observers,
        command_type=WATCH_COMMAND_TYPE,
        hop_count=hop_count,
        parent_turn=parent_turn,
        active_counts=active_counts,
    )
    paired = events.append_event(
        event_type=event_types.SUPERVISION_PAIRED,
        actor=events.SYSTEM,
        to=[w.target for w in workers] + [o.target for o in watchers],
        body={
            "pairId": pair_id,
            "mode": MODE,
            "sourceEventId": source.event_id,
            "watchEventId": brief.event_id,
            "workers": worker_refs,
            "observers": [{"actorId": o.target, "turnId": o.turn_id} for o in watchers],
        },
        correlation_id=source.correlation_id,
        root_correlation_id=source.root_correlation_id,
        causation_id=source.event_id,
        provenance={"sourceKind": "supervision"},
    )
    now = timezone.now()
    SupervisionPair.objects.create(
        pair_id=pair_id,
        room_id=ROOM_ID,
        correlation_id=source.root_correlation_id,
        source_event_id=source.event_id,
        watch_event_id=brief.event_id,
        pair_event_id=paired.event_id,
        mode=MODE,
        created_at=now,
    )
    SupervisionPairTurn.objects.bulk_create(
        [
            SupervisionPairTurn(turn_id=t.turn_id, pair_id=pair_id, role="worker", actor_id=t.target, created_at=now)
            for t in workers
        ]
        + [
            SupervisionPairTurn(turn_id=t.turn_id, pair_id=pair_id, role="observer", actor_id=t.target, created_at=now)
            for t in watchers
        ]
    )
    return {
        "watchTurns": [t.as_rest() for t in watchers],
        "watchEventId": brief.event_id,
        "pairEventId": paired.event_id,
    }


# ---- what a Watch Turn may do -------------------------------------------------------------------


def watched_pair(turn: Turn, tool: str) -> SupervisionPair:
    """The pair ``turn`` observes; SUPERVISION_WATCH_REQUIRED for any other Turn."""
    row = (
        SupervisionPairTurn.objects.select_related("pair").filter(turn_id=turn.turn_id, role="observer").first()
        if turn.command_type == WATCH_COMMAND_TYPE
        else None
    )
    if row is None:
        raise GroupXError("SUPERVISION_WATCH_REQUIRED", f"{tool} works only in a supervision Watch Turn")
    return row.pair


def worker_turns(pair: SupervisionPair) -> list[Turn]:
    """Every worker Turn of the pair, the ones steers queued included, oldest first."""
    ids = SupervisionPairTurn.objects.filter(pair=pair, role="worker").values_list("turn_id", flat=True)
    return list(Turn.objects.filter(turn_id__in=list(ids)).order_by("enqueue_seq"))


SUBJECT_PREFERENCE = (RUNNING, DISPATCHING, QUEUED)


def choose_subject(pair: SupervisionPair, subject_turn_id: Any) -> Turn:
    """The named worker Turn, or the pair's current one (running > dispatching > queued > the latest)."""
    workers = worker_turns(pair)
    if subject_turn_id is not None:
        chosen = next((t for t in workers if t.turn_id == subject_turn_id), None)
        if chosen is None:
            raise pair_invalid(
                "subjectTurnId is not a worker Turn of your pair", unknownTargets=[str(subject_turn_id)[:256]]
            )
        return chosen
    for status in SUBJECT_PREFERENCE:
        found = [t for t in workers if t.status == status]
        if found:
            return found[0]
    return workers[-1]


def check_watch_turn_targets(turn: Turn, target_ids: list[str]) -> None:
    """A Watch Turn redirects its worker with steer, never with send or ask (PROTOCOL §6.7)."""
    if turn.command_type != WATCH_COMMAND_TYPE:
        return
    pair = watched_pair(turn, "send")
    watched = sorted({t.target_actor_id for t in worker_turns(pair)} & set(target_ids))
    if watched:
        raise GroupXError(
            "SUPERVISION_STEER_REQUIRED",
            f"{', '.join(watched)} is the worker you observe: use steer to redirect it",
            details={"targets": watched},
        )

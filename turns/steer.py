"""``steer``: an observer redirects its worker with public guidance (FEATURES §12, PROTOCOL §6.7).

One command: count the steer against the subject Turn's cap (``limits.steersPerSubjectTurn``,
``STEER_LIMIT_REACHED`` past it, never silent); for ``interrupt`` cancel the whole subject Turn
(an ended one is ``SUPERVISION_PAIR_INVALID``: nudge instead); post the guidance as the observer's
message to the worker and queue the worker's next Turn on it (parent: the Watch Turn, hop + 1,
attached to the pair); record ``supervision.steered``. The guidance and the new Turn's
``turn.queued`` name the steer event as their ``causationId`` (PROTOCOL §6.7: its id is drawn
first, the event written last, since it names them); the Watch Turn is the new Turn's parent
(``parent_turn_id``, FEATURES §12) and the steer event's cause. Steering is not approval: it
changes no argv or mode and answers no native prompt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils import timezone

from groupx_site.core.errors import GroupXError, invalid
from groupx_site.core.ids import event_id as new_event_id
from rooms import commands, event_types, events, validation
from setup_wizard import roster
from turns import lifecycle, limits
from turns import supervision as pairing
from turns.actions import check_queue_capacity, do_enqueue_turns
from turns.member_actions import resolve_caller
from turns.models import SupervisionPairTurn, SupervisionSteerCount
from turns.states import TERMINAL_STATUSES

ACTIONS = ("nudge", "interrupt")
MAX_REASON = 500
STEER_FIELDS = {"subjectTurnId", "action", "reason", "content", "clientCommandId"}


@dataclass(frozen=True)
class Steer:
    client_command_id: str
    subject_turn_id: str | None
    action: str
    reason: str
    content: str

    def canonical(self) -> dict[str, Any]:
        return {
            "subjectTurnId": self.subject_turn_id,
            "action": self.action,
            "reason": self.reason,
            "content": self.content,
        }


def check_steer(payload: Any) -> Steer:
    payload = validation.reject_sender_fields(payload or {})
    validation.reject_unknown_keys(payload, STEER_FIELDS)
    action = payload.get("action")
    if action not in ACTIONS:
        raise invalid(f"action must be one of {', '.join(ACTIONS)}")
    reason = payload.get("reason")
    if not isinstance(reason, str) or not reason.strip() or len(reason) > MAX_REASON:
        raise invalid(f"reason must be a non-blank public string of at most {MAX_REASON} characters")
    return Steer(
        client_command_id=validation.client_command_id(payload),
        subject_turn_id=validation.optional_reference(payload, "subjectTurnId"),
        action=action,
        reason=reason,
        content=validation.content(payload),
    )


def count_steer(subject_turn_id: str, limit: int) -> int:
    """The subject's steer count after this one; the write lock is held, so check and bump are one."""
    row, _ = SupervisionSteerCount.objects.get_or_create(subject_turn_id=subject_turn_id)
    if row.steer_count + 1 > limit:
        raise GroupXError(
            "STEER_LIMIT_REACHED",
            f"this Turn was already steered {limit} times",
            details={"limit": limit, "subjectTurnId": subject_turn_id},
        )
    row.steer_count += 1
    row.save(update_fields=["steer_count"])
    return row.steer_count


def member_steer(binding_id: str, payload: Any) -> dict[str, Any]:
    command = check_steer(payload)
    caller = resolve_caller(binding_id)
    config = settings.GROUPX_CONFIG.limits

    def run() -> dict[str, Any]:
        pair = pairing.watched_pair(caller.turn, "steer")
        subject = pairing.choose_subject(pair, command.subject_turn_id)
        if command.action == "interrupt" and subject.status in TERMINAL_STATUSES:
            raise pairing.pair_invalid(
                f"the worker Turn already ended ({subject.status}): nudge instead", subjectTurnId=subject.turn_id
            )
        count = count_steer(subject.turn_id, config.steersPerSubjectTurn)
        worker = roster.live_agent(subject.target_actor_id)
        if worker is None:
            raise GroupXError(
                "UNKNOWN_TARGET",
                f"{subject.target_actor_id} is no longer an enabled agent",
                details={"unknownTargets": [subject.target_actor_id]},
            )
        hop = limits.check_chain_limits(
            caller.turn,
            [worker.actor_id],
            hop_limit=config.hopCount,
            root_limit=config.rootTurns,
            actor_limit=config.actorCallsPerRoot,
        )
        active_counts = check_queue_capacity([worker], config.queuePerAgent)
        if command.action == "interrupt":
            lifecycle.request_cancel(subject.turn_id)  # the whole Turn: no single tool call can be cut
        steer_event_id = new_event_id()
        guidance = events.message_created(
            actor=caller.actor,
            content=command.content,
            to=[worker.actor_id],
            correlation_id=pair.correlation_id,
            source_kind="supervision",
            reply_to_event_id=subject.source_event_id,
            causation_id=steer_event_id,
            extra_body={
                "steer": {
                    "pairId": pair.pair_id,
                    "action": command.action,
                    "reason": command.reason,
                    "subjectTurnId": subject.turn_id,
                }
            },
        )
        queued = do_enqueue_turns(
            source_event=guidance,
            agents=[worker],
            command_type=pairing.STEER_COMMAND_TYPE,
            hop_count=hop,
            parent_turn=caller.turn,
            active_counts=active_counts,
            causation_id=steer_event_id,
        )[0]
        SupervisionPairTurn.objects.create(
            turn_id=queued.turn_id, pair=pair, role="worker", actor_id=worker.actor_id, created_at=timezone.now()
        )
        steered = events.append_event(
            event_type=event_types.SUPERVISION_STEERED,
            actor=caller.actor,
            to=[worker.actor_id],
            body={
                "action": command.action,
                "reason": command.reason,
                "subjectTurnId": subject.turn_id,
                "nextTurnId": queued.turn_id,
                "pairId": pair.pair_id,
                "messageEventId": guidance.event_id,
                "steerCount": count,
                "limit": config.steersPerSubjectTurn,
            },
            correlation_id=pair.correlation_id,
            causation_id=caller.turn.turn_id,
            provenance={"sourceKind": "supervision", "subjectActorId": worker.actor_id},
            event_id=steer_event_id,
        )
        return {
            "pairId": pair.pair_id,
            "action": command.action,
            "subjectTurnId": subject.turn_id,
            "nextTurnId": queued.turn_id,
            "messageEventId": guidance.event_id,
            "steerEventId": steered.event_id,
            "steerCount": count,
            "limit": config.steersPerSubjectTurn,
        }

    return commands.run_once(
        binding_id=binding_id,
        client_command_id=command.client_command_id,
        command_type="mcp.steer",
        canonical=command.canonical(),
        run=run,
    )

"""What an agent does to the room through its MCP binding: send, publish, read (PROTOCOL §6).

The caller is always the binding's actor, and every call must belong to the binding's active Turn;
nothing in the arguments can name a sender. ``ask`` and ``collect`` build on ``send_to_agents``
in ``turns.asks``.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass
from typing import Any, overload

from django.conf import settings
from django.db.models import Q

from groupx_site.core.errors import GroupXError, invalid
from rooms import commands, events, validation
from rooms.actions import check_references_exist, resolve_targets
from rooms.actor_models import SessionBinding
from rooms.event_types import AUDIT_TYPES
from rooms.events import ENVELOPE_FIELDS, ActorRef, envelope_from_row
from rooms.models import Event
from setup_wizard.config import ResolvedAgent
from turns import limits
from turns import supervision as pairing
from turns.actions import check_queue_capacity, do_enqueue_turns
from turns.messages import PostMessage, check_post_message
from turns.models import Turn
from turns.states import IN_FLIGHT_STATUSES

AUDIT_ONLY_TYPES = AUDIT_TYPES  # stored for the record, never shown to a member (rooms/event_types.py)
READ_DEFAULT_LIMIT, READ_MAX_LIMIT = 100, 500


@dataclass(frozen=True)
class Caller:
    binding_id: str
    actor: ActorRef
    turn: Turn


def resolve_binding(binding_id: str | None) -> SessionBinding:
    binding = (
        SessionBinding.objects.select_related("actor").filter(binding_id=binding_id, status="active").first()
        if binding_id
        else None
    )
    if binding is None or binding.actor.kind != "agent":
        raise GroupXError("MCP_BINDING_MISMATCH", "unknown or closed GroupX binding")
    return binding


def resolve_caller(binding_id: str) -> Caller:
    """The binding's agent and its active Turn; a call outside a Turn is MCP_BINDING_MISMATCH."""
    binding = resolve_binding(binding_id)
    turn = (
        Turn.objects.select_related("parent_turn")
        .filter(binding_id=binding_id, status__in=IN_FLIGHT_STATUSES)
        .order_by("-enqueue_seq")
        .first()
    )
    if turn is None:
        raise GroupXError("MCP_BINDING_MISMATCH", "this binding has no active turn; tools work only during a turn")
    actor = ActorRef(binding.actor_id, "agent", binding.actor.display_name, binding.instance_id)
    return Caller(binding_id, actor, turn)


WAKE_FIELDS = frozenset({"to", "content", "replyToEventId", "clientCommandId", "supervision"})


def check_wake_payload(payload: Any, extra_fields: Set[str] = frozenset()) -> PostMessage:
    """send's and ask's body: the web's message check, without forwardedEventId."""
    return check_post_message(payload, WAKE_FIELDS | extra_fields)


def _wake_canonical(command: PostMessage) -> dict[str, Any]:
    # What identifies an agent's send or ask in its receipt (stored hashes depend on these keys).
    return {
        "to": command.to,
        "content": command.content,
        "replyToEventId": command.reply_to_event_id,
        **({"supervision": command.supervision.canonical()} if command.supervision else {}),
    }


def send_to_agents(binding_id: str, command: PostMessage, *, command_type: str) -> dict[str, Any]:
    """send and ask: one message from the caller and one child Turn per target, atomically."""
    caller = resolve_caller(binding_id)
    config = settings.GROUPX_CONFIG.limits
    agents: list[ResolvedAgent] = []

    def run() -> dict[str, Any]:
        agents[:] = resolve_targets(command.to, sender_id=caller.actor.actor_id)
        target_ids = [a.actor_id for a in agents]
        pairing.check_watch_turn_targets(caller.turn, target_ids)
        observers = (
            pairing.check_pair(command.supervision, agents, sender_id=caller.actor.actor_id)
            if command.supervision
            else []
        )
        if command_type == "mcp.ask":
            limits.check_causal_cycle(caller.turn, target_ids)
        # Observers' Watch Turns count against the chain as the workers' Turns do (FEATURES §6.5).
        hop = limits.check_chain_limits(
            caller.turn,
            target_ids + [o.actor_id for o in observers],
            hop_limit=config.hopCount,
            root_limit=config.rootTurns,
            actor_limit=config.actorCallsPerRoot,
        )
        active_counts = check_queue_capacity(agents + observers, config.queuePerAgent)
        check_references_exist(command.reply_to_event_id)
        message = events.message_created(
            actor=caller.actor,
            content=command.content,
            to=target_ids,
            correlation_id=caller.turn.root_correlation_id,
            source_kind="mcp",
            reply_to_event_id=command.reply_to_event_id or caller.turn.source_event_id,
            causation_id=caller.turn.turn_id,
        )
        queued = do_enqueue_turns(
            source_event=message,
            agents=agents,
            command_type=command_type,
            hop_count=hop,
            parent_turn=caller.turn,
            active_counts=active_counts,
        )
        return {
            "messageEventId": message.event_id,
            "correlationId": message.correlation_id,
            "turns": [
                {
                    "target": t.target,
                    "turnId": t.turn_id,
                    "status": t.status,
                    "queuePosition": t.queue_position,
                    **({"activeTurnId": t.active_turn_id} if t.active_turn_id else {}),
                }
                for t in queued
            ],
            **(
                pairing.do_pair(
                    source=message,
                    workers=queued,
                    observers=observers,
                    hop_count=hop,
                    parent_turn=caller.turn,
                    active_counts=active_counts,
                )
                if observers
                else {}
            ),
        }

    try:
        return commands.run_once(
            binding_id=binding_id,
            client_command_id=command.client_command_id,
            command_type=command_type,
            canonical=_wake_canonical(command),
            run=run,
        )
    except GroupXError as error:
        if error.code in limits.CHAIN_LIMIT_CODES:
            limits.record_loop_stopped(
                error=error,
                caller=caller.actor,
                parent=caller.turn,
                command_type=command_type,
                targets=[a.actor_id for a in agents],
            )
        raise


def member_send(binding_id: str, payload: Any) -> dict[str, Any]:
    return send_to_agents(binding_id, check_wake_payload(payload), command_type="mcp.send")


def check_publish(payload: Any) -> dict[str, Any]:
    payload = validation.reject_sender_fields(payload)
    if "supervision" in payload or "to" in payload:
        raise invalid("publish wakes nobody: it takes no to or supervision")
    validation.reject_unknown_keys(payload, {"content", "replyToEventId", "clientCommandId"})
    return {
        "clientCommandId": validation.client_command_id(payload),
        "content": validation.content(payload),
        "replyToEventId": validation.optional_reference(payload, "replyToEventId"),
    }


def member_publish(binding_id: str, payload: Any) -> dict[str, Any]:
    """A public, durable message that wakes nobody (PROTOCOL §6.2)."""
    caller = resolve_caller(binding_id)
    command = check_publish(payload)

    def run() -> dict[str, Any]:
        check_references_exist(command["replyToEventId"])
        message = events.message_created(
            actor=caller.actor,
            content=command["content"],
            to=[],
            correlation_id=caller.turn.root_correlation_id,
            source_kind="mcp",
            reply_to_event_id=command["replyToEventId"] or caller.turn.source_event_id,
            causation_id=caller.turn.turn_id,
        )
        return {"messageEventId": message.event_id, "correlationId": message.correlation_id}

    canonical = {k: v for k, v in command.items() if k != "clientCommandId"}
    return commands.run_once(
        binding_id=binding_id,
        client_command_id=command["clientCommandId"],
        command_type="mcp.publish",
        canonical=canonical,
        run=run,
    )


@overload
def bounded_int(payload: dict[str, Any], field: str, low: int, high: int, default: int) -> int: ...


@overload
def bounded_int(payload: dict[str, Any], field: str, low: int, high: int, default: None) -> int | None: ...


def bounded_int(payload: dict[str, Any], field: str, low: int, high: int, default: int | None) -> int | None:
    value = payload.get(field, default)
    if value is None:
        return None
    if type(value) is not int or not low <= value <= high:
        raise invalid(f"{field} must be an integer from {low} to {high}")
    return value


def member_read(binding_id: str, payload: Any) -> dict[str, Any]:
    """Catch up on a correlation: its public events after a cursor and its Turns (PROTOCOL §6.5)."""
    caller = resolve_caller(binding_id)
    payload = validation.reject_sender_fields(payload or {})
    validation.reject_unknown_keys(payload, {"correlationId", "afterSeq", "limit"})
    correlation = validation.optional_reference(payload, "correlationId") or caller.turn.root_correlation_id
    after = bounded_int(payload, "afterSeq", 0, 2**62, 0)
    limit = bounded_int(payload, "limit", 1, READ_MAX_LIMIT, READ_DEFAULT_LIMIT)
    in_correlation = Q(root_correlation_id=correlation) | Q(correlation_id=correlation)
    rows = list(
        Event.objects.filter(in_correlation, seq__gt=after)
        .exclude(event_type__in=AUDIT_ONLY_TYPES)
        .order_by("seq")
        .values(*ENVELOPE_FIELDS)[:limit]
    )
    turns = Turn.objects.filter(Q(root_correlation_id=correlation) | Q(correlation_id=correlation)).order_by(
        "enqueue_seq"
    )
    result: dict[str, Any] = {
        "correlationId": correlation,
        "events": [envelope_from_row(row) for row in rows],
        "turns": [
            {
                "target": t.target_actor_id,
                "turnId": t.turn_id,
                "status": t.status,
                **({"responseEventId": t.response_event_id} if t.response_event_id else {}),
                **({"errorCode": t.error_code} if t.error_code else {}),
            }
            for t in turns
        ],
    }
    if len(rows) == limit:
        result["nextAfterSeq"] = rows[-1]["seq"]
    return result

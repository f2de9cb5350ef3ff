"""What the operator tools do to the room (FEATURES §13, PROTOCOL §12): send, worker_dispatch and
worker_ask, dispatch_event, read, roster, cancels, supervision_status.

Every write is one command (``rooms.commands.run_once``) under ``binding:operator``; its events
are authored by ``user:assistant`` with ``sourceKind: operator``. A dispatch is a durable
``operator.dispatch`` (no chat bubble): it is room context like a message (memory/transcript.py),
so it counts in context usage and compaction and is the worker's current message.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from agents import health
from groupx_site.core.errors import GroupXError, invalid
from groupx_site.core.ids import OPERATOR_BINDING_ID
from groupx_site.core.ids import correlation_id as new_correlation_id
from memory.transcript import WATCH_BRIEF_KIND
from rooms import commands, event_types, events, validation
from rooms.actions import check_references_exist, resolve_targets
from rooms.events import ENVELOPE_FIELDS, ActorRef, envelope_from_row
from rooms.models import Event
from setup_wizard import roster as live_roster
from turns import lifecycle
from turns import supervision as pairing
from turns.actions import TURN_ID, check_queue_capacity, do_enqueue_turns
from turns.member_actions import bounded_int
from turns.messages import PostMessage, check_post_message
from turns.models import SupervisionPair, SupervisionSteerCount, Turn
from turns.states import TERMINAL_STATUSES

SOURCE_KIND = "operator"
READ_DEFAULT_LIMIT, READ_MAX_LIMIT = 20, 100
READ_CONTENT_CHARACTERS = 2_000
# What the operator's read shows: the room's public meaning, never reasoning or tool records.
READ_TYPES = (
    event_types.MESSAGE_CREATED,
    event_types.OPERATOR_DISPATCH,
    *(name for name in event_types.REGISTRY if name.startswith("supervision.")),
    "turn.completed",
    "turn.failed",
    "turn.cancelled",
    "turn.interrupted",
    "context.reset",
    "context.compaction.completed",
    "session.ready",
    "session.failed",
    "session.stopped",
    "routing.loop_stopped",
    "system.error",
)
DISPATCH_FIELDS = frozenset({"to", "content", "clientCommandId", "supervision"})


def assistant_actor() -> ActorRef:
    config = settings.GROUPX_CONFIG.assistant
    return ActorRef("user:assistant", "user", config.name if config is not None else "房间助理")


def _run(command_type: str, client_command_id: str, canonical: dict[str, Any], run) -> dict[str, Any]:
    return commands.run_once(
        binding_id=OPERATOR_BINDING_ID,
        client_command_id=client_command_id,
        command_type=command_type,
        canonical=canonical,
        run=run,
    )


def _turns_json(queued) -> list[dict[str, Any]]:
    return [turn.as_rest() for turn in queued]


# ---- send: a public message ------------------------------------------------------------------------
def check_operator_send(payload: Any) -> PostMessage:
    """The message check, with ``to`` optional: the assistant may speak without waking anyone; a
    ``supervision`` pair (FEATURES §12) needs the workers it observes, so a ``to``."""
    fields = {"to", "content", "replyToEventId", "clientCommandId", "supervision"}
    payload = validation.reject_sender_fields(payload)
    if payload.get("to") in (None, []):
        if payload.get("supervision") is not None:
            raise invalid("supervision pairs observers with the workers in to: name at least one")
        placeholder = check_post_message({**payload, "to": ["@all"]}, fields)
        return replace(placeholder, to=[])
    return check_post_message(payload, fields)


def operator_send(payload: Any) -> dict[str, Any]:
    command = check_operator_send(payload)

    def run() -> dict[str, Any]:
        agents = resolve_targets(command.to) if command.to else []
        observers = pairing.check_pair(command.supervision, agents) if command.supervision else []
        check_references_exist(command.reply_to_event_id)
        active = check_queue_capacity(agents + observers, settings.GROUPX_CONFIG.limits.queuePerAgent)
        correlation = new_correlation_id()
        message = events.message_created(
            actor=assistant_actor(),
            content=command.content,
            to=[a.actor_id for a in agents],
            correlation_id=correlation,
            source_kind=SOURCE_KIND,
            reply_to_event_id=command.reply_to_event_id,
        )
        queued = do_enqueue_turns(
            source_event=message, agents=agents, command_type="operator.send", active_counts=active
        )
        return {
            "messageEventId": message.event_id,
            "correlationId": correlation,
            "turns": _turns_json(queued),
            **(
                pairing.do_pair(source=message, workers=queued, observers=observers, active_counts=active)
                if observers
                else {}
            ),
        }

    return _run("operator.send", command.client_command_id, command.canonical(), run)


# ---- worker_dispatch / worker_ask ------------------------------------------------------------------
def check_dispatch(payload: Any, extra: frozenset[str] = frozenset()) -> PostMessage:
    return check_post_message(payload, DISPATCH_FIELDS | extra)


def dispatch(command: PostMessage, operation: str) -> dict[str, Any]:
    """A durable ``operator.dispatch`` to the targets, their Turns and, with ``supervision``, the
    pair: one command."""

    def run() -> dict[str, Any]:
        agents = resolve_targets(command.to)
        observers = pairing.check_pair(command.supervision, agents) if command.supervision else []
        active = check_queue_capacity(agents + observers, settings.GROUPX_CONFIG.limits.queuePerAgent)
        targets = [a.actor_id for a in agents]
        correlation = new_correlation_id()
        actor = assistant_actor()
        source = events.append_event(
            event_type=event_types.OPERATOR_DISPATCH,
            actor=actor,
            to=targets,
            correlation_id=correlation,
            body={
                "content": command.content,
                "operation": operation,
                "promptLength": len(command.content),
                "targets": targets,
            },
            provenance={"sourceKind": SOURCE_KIND, "authorActorId": actor.actor_id},
        )
        queued = do_enqueue_turns(
            source_event=source, agents=agents, command_type="operator.dispatch", active_counts=active
        )
        return {
            "dispatchEventId": source.event_id,
            "messageEventId": source.event_id,
            "correlationId": correlation,
            "turns": _turns_json(queued),
            **(
                pairing.do_pair(source=source, workers=queued, observers=observers, active_counts=active)
                if observers
                else {}
            ),
        }

    return _run(f"operator.{operation}", command.client_command_id, command.canonical(), run)


# ---- dispatch_event: re-route a room message, keeping its author -------------------------------------
@dataclass(frozen=True)
class Reroute:
    client_command_id: str
    source_event_id: str
    command: PostMessage  # to and supervision (content is the source's)


def check_dispatch_event(payload: Any) -> Reroute:
    payload = validation.reject_sender_fields(payload)
    validation.reject_unknown_keys(payload, {"sourceEventId", "to", "clientCommandId", "supervision"})
    source_event_id = validation.optional_reference(payload, "sourceEventId")
    if source_event_id is None:
        raise invalid("sourceEventId is required")
    routed = {k: payload[k] for k in ("to", "clientCommandId", "supervision") if k in payload}
    return Reroute(
        validation.client_command_id(payload),
        source_event_id,
        check_post_message({**routed, "content": "-"}, {"to", "content", "clientCommandId", "supervision"}),
    )


def _duplicate(source: Event, woken: list[str]) -> GroupXError:
    return GroupXError(
        "DUPLICATE_DISPATCH",
        f"{source.event_id} already woke {', '.join(woken)}",
        details={"sourceEventId": source.event_id, "targets": woken},
    )


def check_not_woken_yet(source: Event, agents: list) -> None:
    """A message wakes an agent once: ``UNIQUE(source_event_id, target_actor_id)`` on the Turns is
    the dispatch key (FEATURES §18), answered 409 ``DUPLICATE_DISPATCH`` before any write."""
    woken = sorted(
        Turn.objects.filter(
            source_event_id=source.event_id, target_actor_id__in=[a.actor_id for a in agents]
        ).values_list("target_actor_id", flat=True)
    )
    if woken:
        raise _duplicate(source, woken)


def enqueue_once(source: Event, agents: list, active: dict[str, int]) -> list:
    """The Turns of a re-route. Should another process's re-route of the same message commit
    between the check above and these inserts (PostgreSQL, split mode), the key itself refuses it:
    the same 409, and the savepoint leaves nothing of this command."""
    try:
        with transaction.atomic():
            return do_enqueue_turns(
                source_event=source, agents=agents, command_type="operator.dispatch_event", active_counts=active
            )
    except IntegrityError as error:
        raise _duplicate(source, sorted(a.actor_id for a in agents)) from error


def dispatch_event(reroute: Reroute) -> dict[str, Any]:
    command = reroute.command

    def run() -> dict[str, Any]:
        source = Event.objects.filter(event_id=reroute.source_event_id).first()
        if source is None:
            raise invalid(f"no such event: {reroute.source_event_id}", unknownEvents=[reroute.source_event_id])
        if source.event_type != event_types.MESSAGE_CREATED or (source.body or {}).get("kind") == WATCH_BRIEF_KIND:
            raise invalid(
                "only a room message.created can be dispatched again (not a watch brief or an operator.dispatch)"
            )
        agents = resolve_targets(command.to)
        check_not_woken_yet(source, agents)
        observers = pairing.check_pair(command.supervision, agents) if command.supervision else []
        active = check_queue_capacity(agents + observers, settings.GROUPX_CONFIG.limits.queuePerAgent)
        queued = enqueue_once(source, agents, active)
        return {
            "sourceEventId": source.event_id,
            "correlationId": source.correlation_id,
            "turns": _turns_json(queued),
            **(
                pairing.do_pair(source=source, workers=queued, observers=observers, active_counts=active)
                if observers
                else {}
            ),
        }

    canonical = {
        "sourceEventId": reroute.source_event_id,
        "to": command.to,
        **({"supervision": command.supervision.canonical()} if command.supervision else {}),
    }
    return _run("operator.dispatch_event", reroute.client_command_id, canonical, run)


# ---- read ------------------------------------------------------------------------------------------
def _projected(row: dict[str, Any]) -> dict[str, Any]:
    envelope = envelope_from_row(row)
    body = dict(envelope.get("body") or {})
    content = body.get("content")
    if isinstance(content, str) and len(content) > READ_CONTENT_CHARACTERS:
        body["content"] = content[:READ_CONTENT_CHARACTERS] + "…"
        body["contentTruncated"] = True
    envelope["body"] = body
    return envelope


def operator_read(payload: Any) -> dict[str, Any]:
    """The room's public meaning after ``afterSeq`` (or the latest ``limit`` events)."""
    payload = validation.reject_sender_fields(payload or {})
    validation.reject_unknown_keys(payload, {"correlationId", "afterSeq", "limit"})
    correlation = validation.optional_reference(payload, "correlationId")
    after = bounded_int(payload, "afterSeq", 0, 2**62, None)
    limit = bounded_int(payload, "limit", 1, READ_MAX_LIMIT, READ_DEFAULT_LIMIT)
    rows = Event.objects.filter(event_type__in=READ_TYPES)
    if correlation:
        rows = rows.filter(root_correlation_id=correlation) | rows.filter(correlation_id=correlation)
    if after is not None:
        found = list(rows.filter(seq__gt=after).order_by("seq").values(*ENVELOPE_FIELDS)[:limit])
    else:
        found = list(reversed(rows.order_by("-seq").values(*ENVELOPE_FIELDS)[:limit]))
    head = Event.objects.order_by("-seq").values_list("seq", flat=True).first() or 0
    return {
        "events": [_projected(row) for row in found],
        "throughSeq": head,
        "nextAfterSeq": found[-1]["seq"] if found else (after or head),
    }


# ---- roster ----------------------------------------------------------------------------------------
def roster() -> dict[str, Any]:
    agents = [
        {
            "actorId": a.actor_id,
            "name": a.display_name,
            "driver": a.driver,
            "enabled": a.enabled,
            "cwd": a.cwd,
            "health": health.snapshot(a.actor_id) if a.enabled else None,
        }
        for a in live_roster.configured_agents()
    ]
    active = Turn.objects.exclude(status__in=TERMINAL_STATUSES).order_by("enqueue_seq")
    turns = [
        {
            "turnId": t.turn_id,
            "target": t.target_actor_id,
            "status": t.status,
            "sourceEventId": t.source_event_id,
            "correlationId": t.root_correlation_id,
        }
        for t in active[:200]
    ]
    pairs = []
    for pair in SupervisionPair.objects.order_by("-created_at")[:20]:
        members = list(pair.turns.values("turn_id", "role", "actor_id"))
        counts = dict(
            SupervisionSteerCount.objects.filter(subject_turn_id__in=[m["turn_id"] for m in members]).values_list(
                "subject_turn_id", "steer_count"
            )
        )
        pairs.append(
            {
                "pairId": pair.pair_id,
                "correlationId": pair.correlation_id,
                "turns": [
                    {
                        "turnId": m["turn_id"],
                        "role": m["role"],
                        "actorId": m["actor_id"],
                        "steerCount": counts.get(m["turn_id"], 0),
                    }
                    for m in members
                ],
            }
        )
    return {"agents": agents, "activeTurns": turns, "pairs": pairs}


# ---- cancels ---------------------------------------------------------------------------------------
def turn_cancel(payload: Any) -> dict[str, Any]:
    payload = validation.reject_sender_fields(payload)
    validation.reject_unknown_keys(payload, {"turnId", "clientCommandId"})
    client_command_id = validation.client_command_id(payload)
    turn_id = payload.get("turnId")
    if not isinstance(turn_id, str) or not TURN_ID.match(turn_id):
        raise invalid("turnId is malformed")

    def run() -> dict[str, Any]:
        if not Turn.objects.filter(turn_id=turn_id).exists():
            raise GroupXError("UNKNOWN_TARGET", f"no turn {turn_id}", details={"unknownTargets": [turn_id]})
        accepted, status = lifecycle.request_cancel(turn_id)
        return {"turnId": turn_id, "accepted": accepted, "status": status}

    return _run("operator.turn_cancel", client_command_id, {"turnId": turn_id}, run)


def turns_cancel(payload: Any) -> dict[str, Any]:
    """Cancel every active Turn, or those of the agents in ``to``."""
    payload = validation.reject_sender_fields(payload)
    validation.reject_unknown_keys(payload, {"to", "clientCommandId"})
    client_command_id = validation.client_command_id(payload)
    to = validation.targets(payload, allow_all=False) if "to" in payload else None

    def run() -> dict[str, Any]:
        active = Turn.objects.exclude(status__in=TERMINAL_STATUSES)
        if to is not None:
            active = active.filter(target_actor_id__in=to)
        cancelled = []
        for turn_id in active.order_by("enqueue_seq").values_list("turn_id", flat=True):
            accepted, status = lifecycle.request_cancel(turn_id)
            cancelled.append({"turnId": turn_id, "accepted": accepted, "status": status})
        return {"turns": cancelled}

    return _run("operator.turns_cancel", client_command_id, {"to": to}, run)


# ---- supervision_status ----------------------------------------------------------------------------
def supervision_status(payload: Any) -> dict[str, Any]:
    payload = validation.reject_sender_fields(payload or {})
    validation.reject_unknown_keys(payload, {"pairId", "correlationId"})
    pair_id = validation.optional_reference(payload, "pairId")
    correlation = validation.optional_reference(payload, "correlationId")
    if (pair_id is None) == (correlation is None):
        raise invalid("give exactly one of pairId or correlationId")
    pairs = (
        SupervisionPair.objects.filter(pair_id=pair_id)
        if pair_id
        else SupervisionPair.objects.filter(correlation_id=correlation)
    )
    found = []
    for pair in pairs.order_by("created_at"):
        members = list(pair.turns.values("turn_id", "role", "actor_id"))
        statuses = dict(
            Turn.objects.filter(turn_id__in=[m["turn_id"] for m in members]).values_list("turn_id", "status")
        )
        counts = dict(
            SupervisionSteerCount.objects.filter(subject_turn_id__in=statuses).values_list(
                "subject_turn_id", "steer_count"
            )
        )
        found.append(
            {
                "pairId": pair.pair_id,
                "correlationId": pair.correlation_id,
                "mode": pair.mode,
                "sourceEventId": pair.source_event_id,
                "turns": [
                    {
                        "turnId": m["turn_id"],
                        "role": m["role"],
                        "actorId": m["actor_id"],
                        "status": statuses.get(m["turn_id"]),
                        "steerCount": counts.get(m["turn_id"], 0),
                    }
                    for m in members
                ],
            }
        )
    if not found:
        raise GroupXError(
            "UNKNOWN_TARGET", "no supervision pair matches", details={"unknownTargets": [pair_id or correlation]}
        )
    return {"pairs": found}

"""Room actions: what the browser (REST) and, later, the agents (MCP) do to the room.

``post_message`` is PROTOCOL §10.2: one transaction writes the receipt, ``message.created`` and
one ``turn.queued`` + Turn per target, or nothing at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction

from agents import roster
from agents.models import WEB_BINDING_ID
from groupx_site.errors import GroupXError, invalid
from rooms import commands, events, validation
from rooms.ids import correlation_id as new_correlation_id
from rooms.models import Event
from setup_wizard.config import ResolvedAgent
from turns.actions import check_queue_capacity, do_enqueue_turns

POST_MESSAGE_FIELDS = {"clientCommandId", "to", "content", "replyToEventId", "forwardedEventId"}


@dataclass(frozen=True)
class PostMessage:
    client_command_id: str
    to: list[str]
    content: str
    reply_to_event_id: str | None
    forwarded_event_id: str | None

    def canonical(self) -> dict[str, Any]:
        return {
            "to": self.to,
            "content": self.content,
            "replyToEventId": self.reply_to_event_id,
            "forwardedEventId": self.forwarded_event_id,
        }


def check_post_message(payload: Any) -> PostMessage:
    payload = validation.reject_sender_fields(payload)
    if "supervision" in payload:
        raise invalid("supervision pairing is not available in this version of GroupX")
    validation.reject_unknown_keys(payload, POST_MESSAGE_FIELDS)
    return PostMessage(
        client_command_id=validation.client_command_id(payload),
        to=validation.targets(payload),
        content=validation.content(payload),
        reply_to_event_id=validation.optional_reference(payload, "replyToEventId"),
        forwarded_event_id=validation.optional_reference(payload, "forwardedEventId"),
    )


def resolve_targets(to: list[str]) -> list[ResolvedAgent]:
    """Expand ``@all`` to every live agent and reject ids that are not live targets (404)."""
    if validation.ALL_TOKEN in to:
        agents = roster.live_agents()
        if not agents:
            raise GroupXError("UNKNOWN_TARGET", "no agent is enabled", details={"unknownTargets": ["@all"]})
        named = [t for t in to if t != validation.ALL_TOKEN]
    else:
        agents, named = [], to
    unknown = [t for t in named if roster.live_agent(t) is None]
    if unknown:
        raise GroupXError(
            "UNKNOWN_TARGET",
            f"not an enabled agent of this room: {', '.join(unknown)}",
            details={"unknownTargets": unknown},
        )
    by_id = {agent.actor_id: agent for agent in agents}
    for actor_id in named:
        by_id[actor_id] = roster.live_agent(actor_id)
    return sorted(by_id.values(), key=lambda a: a.actor_id)


def check_references_exist(*event_ids: str | None) -> None:
    wanted = [e for e in event_ids if e]
    if not wanted:
        return
    found = set(Event.objects.filter(event_id__in=wanted).values_list("event_id", flat=True))
    missing = [e for e in wanted if e not in found]
    if missing:
        raise invalid(f"no such event: {', '.join(missing)}", unknownEvents=missing)


def post_message(payload: Any) -> dict[str, Any]:
    """Validate, then accept atomically. Returns the 202 body (the stored one on a retry)."""
    command = check_post_message(payload)
    digest = commands.canonical_hash("web.message", command.canonical())
    with transaction.atomic():
        stored = commands.find_receipt(WEB_BINDING_ID, command.client_command_id, "web.message", digest)
        if stored is not None:
            return stored
        agents = resolve_targets(command.to)
        check_references_exist(command.reply_to_event_id, command.forwarded_event_id)
        active_counts = check_queue_capacity(agents, settings.GROUPX_CONFIG.limits.queuePerAgent)
        result = do_post_message(command, agents, active_counts)
        commands.store_receipt(WEB_BINDING_ID, command.client_command_id, "web.message", digest, result)
    return result


def do_post_message(command: PostMessage, agents: list[ResolvedAgent],
                    active_counts: dict[str, int] | None = None) -> dict[str, Any]:
    correlation = new_correlation_id()
    message = events.message_created(
        actor=events.WEB_USER,
        content=command.content,
        to=[agent.actor_id for agent in agents],
        correlation_id=correlation,
        source_kind="web",
        reply_to_event_id=command.reply_to_event_id,
        forwarded_event_id=command.forwarded_event_id,
    )
    queued = do_enqueue_turns(source_event=message, agents=agents, command_type="web.message",
                              active_counts=active_counts)
    return {
        "messageEventId": message.event_id,
        "correlationId": correlation,
        "turns": [turn.as_rest() for turn in queued],
    }

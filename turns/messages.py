"""``POST /api/messages`` (PROTOCOL §10.2): a user message that queues one Turn per target.

One transaction writes the receipt, ``message.created`` and one ``turn.queued`` + Turn per target
(and, when ``supervision`` asks for it, the pair: ``turns/supervision.py``), or nothing at all
(``rooms.commands.run_once``). The body check here serves the agents' send and ask too
(``turns.member_actions``) and the side chat's dispatch (``assistant.operator_room``). It lives in
``turns`` because it queues Turns; the target resolver and the reference check stay in
``rooms.actions`` (D151).
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from groupx_site.core.ids import WEB_BINDING_ID
from groupx_site.core.ids import correlation_id as new_correlation_id
from rooms import commands, events, validation
from rooms.actions import check_references_exist, resolve_targets
from setup_wizard.config import ResolvedAgent
from turns import supervision as pairing
from turns.actions import check_queue_capacity, do_enqueue_turns

POST_MESSAGE_FIELDS = {"clientCommandId", "to", "content", "replyToEventId", "forwardedEventId", "supervision"}


@dataclass(frozen=True)
class PostMessage:
    client_command_id: str
    to: list[str]
    content: str
    reply_to_event_id: str | None
    forwarded_event_id: str | None
    supervision: pairing.Supervision | None = None

    def canonical(self) -> dict[str, Any]:
        return {
            "to": self.to,
            "content": self.content,
            "replyToEventId": self.reply_to_event_id,
            "forwardedEventId": self.forwarded_event_id,
            # Only a paired post hashes the key: the receipts stored before it still match.
            **({"supervision": self.supervision.canonical()} if self.supervision else {}),
        }


def check_post_message(payload: Any, fields: Set[str] = POST_MESSAGE_FIELDS) -> PostMessage:
    """The one body check of a message that wakes agents: the web's post and an agent's send/ask
    (``fields``: the keys that caller may send; a key it may not send is an unknown field)."""
    payload = validation.reject_sender_fields(payload)
    validation.reject_unknown_keys(payload, fields)
    to = validation.targets(payload)
    return PostMessage(
        client_command_id=validation.client_command_id(payload),
        to=to,
        content=validation.content(payload),
        reply_to_event_id=validation.optional_reference(payload, "replyToEventId"),
        forwarded_event_id=validation.optional_reference(payload, "forwardedEventId"),
        supervision=pairing.check_supervision(payload, to),
    )


def post_message(payload: Any) -> dict[str, Any]:
    """Validate, then accept atomically. Returns the 202 body (the stored one on a retry)."""
    return accept_message(check_post_message(payload))


def accept_message(command: PostMessage) -> dict[str, Any]:
    """Accept a checked message atomically (the REST view's body model ran ``check_post_message``)."""

    def run() -> dict[str, Any]:
        agents = resolve_targets(command.to)
        observers = pairing.check_pair(command.supervision, agents) if command.supervision else []
        check_references_exist(command.reply_to_event_id, command.forwarded_event_id)
        active_counts = check_queue_capacity(agents + observers, settings.GROUPX_CONFIG.limits.queuePerAgent)
        return do_post_message(command, agents, active_counts, observers)

    return commands.run_once(
        binding_id=WEB_BINDING_ID,
        client_command_id=command.client_command_id,
        command_type="web.message",
        canonical=command.canonical(),
        run=run,
    )


def do_post_message(
    command: PostMessage,
    agents: list[ResolvedAgent],
    active_counts: dict[str, int] | None = None,
    observers: Sequence[ResolvedAgent] = (),
) -> dict[str, Any]:
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
    queued = do_enqueue_turns(
        source_event=message, agents=agents, command_type="web.message", active_counts=active_counts
    )
    return {
        "messageEventId": message.event_id,
        "correlationId": correlation,
        "turns": [turn.as_rest() for turn in queued],
        **(
            pairing.do_pair(source=message, workers=queued, observers=list(observers), active_counts=active_counts)
            if observers
            else {}
        ),
    }

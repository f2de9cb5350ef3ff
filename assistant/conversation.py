"""The side chat's rows (FEATURES §13, PROTOCOL §10.7): the body's rules, the user row written once
per clientCommandId, the one reply to it, and the list the panel shows. Sync ORM functions, run on
the store's threads (``groupx_site.store.db``).

A user message is one command (``rooms.commands.run_once`` on the web binding): a retry with the
same clientCommandId and content finds the row it wrote, another content under that id is
``CLIENT_COMMAND_CONFLICT``. The reply is written by the brain's run, at most once per user row
(``reply_to`` is unique), so a run that is retried after a crash never answers twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from assistant.models import AssistantMessage
from groupx_site.core.errors import invalid
from groupx_site.core.ids import new_id
from rooms import commands, validation

HISTORY_LIMIT = 200
FAILURE_CHARACTERS = 500  # a failure is stored short: the code and the start of its message
COMMAND_TYPE = "assistant.message"
# Refused as INVALID_ENVELOPE before the unknown keys: the side chat has no targets and no pairs.
ROOM_ONLY_FIELDS = ("to", "supervision")


@dataclass(frozen=True)
class SideMessage:
    client_command_id: str
    content: str


def check_side_message(payload: Any) -> SideMessage:
    """``{clientCommandId, content}`` and nothing else: the sender's fields first
    (SENDER_FIELD_FORBIDDEN), then a room's routing fields, then unknown keys, then each field."""
    payload = validation.reject_sender_fields(payload)
    routed = [field for field in ROOM_ONLY_FIELDS if field in payload]
    if routed:
        raise invalid(f"the side chat talks to the assistant only; remove {', '.join(routed)}", unknownFields=routed)
    validation.reject_unknown_keys(payload, {"clientCommandId", "content"})
    return SideMessage(validation.client_command_id(payload), validation.content(payload))


def check_side_cancel(payload: Any) -> str:
    payload = validation.reject_sender_fields(payload)
    validation.reject_unknown_keys(payload, {"clientCommandId"})
    return validation.client_command_id(payload)


def as_json(message: AssistantMessage) -> dict[str, Any]:
    body: dict[str, Any] = {
        "messageId": message.message_id,
        "role": message.role,
        "content": message.content,
        "createdAt": message.created_at.isoformat(timespec="milliseconds"),
    }
    if message.client_command_id:
        body["clientCommandId"] = message.client_command_id
    if message.outcome and message.outcome != "answered":
        body["outcome"] = message.outcome
    return body


def record_user_message(binding_id: str, message: SideMessage) -> dict[str, Any]:
    """The user row of this clientCommandId, written by the first call only: ``{userMessage}``."""

    def run() -> dict[str, Any]:
        row = AssistantMessage.objects.create(
            message_id=new_id("amsg"), role="user", content=message.content, client_command_id=message.client_command_id
        )
        return {"userMessage": as_json(row)}

    return commands.run_once(
        binding_id=binding_id,
        client_command_id=message.client_command_id,
        command_type=COMMAND_TYPE,
        canonical={"content": message.content},
        run=run,
    )


def reply_to(user_message_id: str) -> dict[str, Any] | None:
    row = AssistantMessage.objects.filter(reply_to_id=user_message_id).first()
    return as_json(row) if row is not None else None


def user_message_of(client_command_id: str) -> str | None:
    return (
        AssistantMessage.objects.filter(role="user", client_command_id=client_command_id)
        .values_list("message_id", flat=True)
        .first()
    )


def store_reply(user_message_id: str, content: str, outcome: str = "answered", error_code: str = "") -> dict[str, Any]:
    """The one reply to a user row; a second one (a retried run raced the first) returns the first."""
    with transaction.atomic():
        existing = AssistantMessage.objects.filter(reply_to_id=user_message_id).first()
        if existing is not None:
            return as_json(existing)
        if outcome != "answered":
            content = content[:FAILURE_CHARACTERS]
        row = AssistantMessage.objects.create(
            message_id=new_id("amsg"),
            role="assistant",
            content=content,
            reply_to_id=user_message_id,
            outcome=outcome,
            error_code=error_code,
        )
        return as_json(row)


def user_content(user_message_id: str) -> str:
    return AssistantMessage.objects.values_list("content", flat=True).get(message_id=user_message_id)


def recent_messages() -> dict[str, Any]:
    """The ``HISTORY_LIMIT`` most recent rows, oldest first."""
    rows = list(AssistantMessage.objects.order_by("-created_at", "-message_id")[:HISTORY_LIMIT])
    return {"messages": [as_json(row) for row in reversed(rows)]}

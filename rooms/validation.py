"""Strict request-body validation shared by REST and MCP (PROTOCOL §3.2, §10.2; FEATURES §6.5).

Order matters and is fixed: sender fields first (their values are never read), then unknown
keys, then each field. Lengths count Unicode code points (Python ``len``).
"""

from __future__ import annotations

import re
from collections.abc import Set
from typing import Any

from groupx_site.core.errors import GroupXError, invalid
from setup_wizard.config import MESSAGE_CHARACTERS

SENDER_FIELDS = ("from", "actor", "provenance", "sender", "eventId")
AGENT_ACTOR_RE = re.compile(r"^agent:[A-Za-z0-9](?:[A-Za-z0-9._-]{0,62}[A-Za-z0-9])?$")
ALL_TOKEN = "@all"
MAX_TARGETS = 32
MAX_REFERENCE = 256
MAX_CLIENT_COMMAND_ID = 128


def reject_sender_fields(payload: Any) -> dict[str, Any]:
    if not isinstance(payload, dict):
        raise invalid("the body must be a JSON object")
    forbidden = [field for field in SENDER_FIELDS if field in payload]
    if forbidden:
        raise GroupXError(
            "SENDER_FIELD_FORBIDDEN",
            "the sender is fixed by the channel binding; remove " + ", ".join(forbidden),
            details={"forbiddenFields": forbidden},
        )
    return payload


def reject_unknown_keys(payload: dict[str, Any], allowed: Set[str]) -> None:
    unknown = sorted(set(payload) - allowed)
    if unknown:
        raise invalid(f"unknown field(s): {', '.join(unknown)}", unknownFields=unknown)


def client_command_id(payload: dict[str, Any]) -> str:
    value = payload.get("clientCommandId")
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_CLIENT_COMMAND_ID:
        raise invalid("clientCommandId must be a non-blank string of at most 128 characters")
    return value


def content(payload: dict[str, Any], field: str = "content") -> str:
    value = payload.get(field)
    if not isinstance(value, str) or not value.strip():
        raise invalid(f"{field} must be a non-blank string")
    if len(value) > MESSAGE_CHARACTERS:
        raise GroupXError(
            "MESSAGE_TOO_LARGE",
            f"{field} has {len(value)} characters; the limit is {MESSAGE_CHARACTERS}",
            details={"limit": MESSAGE_CHARACTERS, "length": len(value)},
        )
    return value


def optional_reference(payload: dict[str, Any], field: str) -> str | None:
    value = payload.get(field)
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_REFERENCE:
        raise invalid(f"{field} must be an event id of at most {MAX_REFERENCE} characters, or null")
    return value


def targets(payload: dict[str, Any], *, allow_all: bool = True) -> list[str]:
    """The ``to`` list: 1..32 unique ``agent:<id>`` ids (or the token ``@all``), sorted."""
    value = payload.get("to")
    if not isinstance(value, list) or not value:
        raise invalid("to must be a non-empty list of agent ids")
    if len(value) > MAX_TARGETS:
        raise invalid(f"to lists {len(value)} targets; at most {MAX_TARGETS} are allowed")
    if len(set(map(str, value))) != len(value):
        raise invalid("to must not repeat a target")
    malformed = [
        t for t in value if not isinstance(t, str) or not (AGENT_ACTOR_RE.match(t) or (allow_all and t == ALL_TOKEN))
    ]
    if malformed:
        raise invalid("to must hold agent actor ids such as agent:codex", malformedTargets=[str(t) for t in malformed])
    return sorted(value)

"""Strict parsing of memory and identity commands and list queries (FEATURES §11, §15).

Same order as every other command (rooms/validation.py): sender fields first, then unknown keys,
then each field; nothing here looks anything up, so a malformed body never reaches the store.
REST query strings are converted to JSON types first, so REST and MCP share one set of rules.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from groupx_site.core.errors import invalid
from memory.models import AGENT_MEMORY_TYPES, IDENTITY_KINDS, SCOPE_TYPES
from rooms import validation
from rooms.validation import AGENT_ACTOR_RE

# ``summary`` is written only by GroupX itself (FEATURES §15.1).
WRITABLE_MEMORY_KINDS = ("fact", "decision", "preference", "instruction", "constraint", "note")
ACTOR_RE = re.compile(r"^(agent|user|system):[A-Za-z0-9](?:[A-Za-z0-9._-]{0,62}[A-Za-z0-9])?$")
MAX_SCOPE_ID = 256
MAX_QUERY = 1_024
LIST_DEFAULT, LIST_MAX = 100, 500


@dataclass(frozen=True)
class MemoryWrite:
    client_command_id: str
    scope_type: str
    scope_id: str
    agent_memory_type: str | None
    kind: str
    content: str
    subject_actor_id: str | None
    source_event_id: str | None

    def canonical(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "client_command_id"}


@dataclass(frozen=True)
class IdentityWrite:
    client_command_id: str
    subject_actor_id: str | None  # None: fixed to the caller (MCP)
    kind: str
    content: str
    source_event_id: str | None

    def canonical(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "client_command_id"}


@dataclass(frozen=True)
class Supersede:
    client_command_id: str
    kind: str | None
    content: str
    source_event_id: str | None

    def canonical(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "client_command_id"}


@dataclass(frozen=True)
class ListQuery:
    scope_type: str | None = None
    scope_id: str | None = None
    agent_memory_type: str | None = None
    kind: str | None = None
    author_actor_id: str | None = None
    subject_actor_id: str | None = None
    query: str | None = None
    cursor: int = 0
    limit: int = LIST_DEFAULT
    include_history: bool = False


def _strict(payload: Any, allowed: set[str]) -> dict[str, Any]:
    payload = validation.reject_sender_fields(payload)
    validation.reject_unknown_keys(payload, allowed)
    return payload


def _choice(payload: dict[str, Any], field: str, choices: tuple[str, ...], *, required: bool = True) -> str | None:
    value = payload.get(field)
    if value is None and not required:
        return None
    if value not in choices:
        raise invalid(f"{field} must be one of {', '.join(choices)}")
    return value


def _actor(payload: dict[str, Any], field: str, *, required: bool = False) -> str | None:
    value = payload.get(field)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not ACTOR_RE.match(value):
        raise invalid(f"{field} must be an actor id such as agent:codex or user:web")
    return value


def _scope(value: Any) -> tuple[str, str]:
    if not isinstance(value, dict):
        raise invalid('scope must be an object such as {"type": "room", "id": "room:main"}')
    validation.reject_unknown_keys(value, {"type", "id"})
    scope_type = _choice(value, "type", SCOPE_TYPES)
    scope_id = value.get("id")
    if not isinstance(scope_id, str) or not scope_id or len(scope_id) > MAX_SCOPE_ID:
        raise invalid(f"scope.id must be a non-empty string of at most {MAX_SCOPE_ID} characters")
    if scope_type == "agent" and not AGENT_ACTOR_RE.match(scope_id):
        raise invalid("an agent scope id is an agent actor id such as agent:codex")
    return scope_type, scope_id


def check_memory_write(payload: Any) -> MemoryWrite:
    """REST ``POST /api/memory`` and MCP ``memory_remember``: agent scope is always ``core`` (dated
    memory is written only by the daily rollup), so ``agentMemoryType`` is not an input."""
    payload = _strict(payload, {"clientCommandId", "scope", "kind", "content", "subjectActorId", "sourceEventId"})
    client_command_id = validation.client_command_id(payload)
    scope_type, scope_id = _scope(payload.get("scope"))
    return MemoryWrite(
        client_command_id=client_command_id,
        scope_type=scope_type,
        scope_id=scope_id,
        agent_memory_type="core" if scope_type == "agent" else None,
        kind=_choice(payload, "kind", WRITABLE_MEMORY_KINDS),
        content=validation.content(payload),
        subject_actor_id=_actor(payload, "subjectActorId"),
        source_event_id=validation.optional_reference(payload, "sourceEventId"),
    )


def check_self_write(payload: Any, kinds: tuple[str, ...]) -> tuple[str, str, str, str | None]:
    """MCP ``core_memory_remember`` / ``identity_remember``: no scope, subject, author or binding
    field exists; anything else is an unknown key (INVALID_ENVELOPE)."""
    payload = _strict(payload, {"clientCommandId", "kind", "content", "sourceEventId"})
    return (
        validation.client_command_id(payload),
        _choice(payload, "kind", kinds),
        validation.content(payload),
        validation.optional_reference(payload, "sourceEventId"),
    )


def check_identity_write(payload: Any) -> IdentityWrite:
    payload = _strict(payload, {"clientCommandId", "subjectActorId", "kind", "content", "sourceEventId"})
    client_command_id = validation.client_command_id(payload)
    subject = _actor(payload, "subjectActorId", required=True)
    if not AGENT_ACTOR_RE.match(subject):
        raise invalid("identity records describe an agent: subjectActorId must be agent:<id>")
    return IdentityWrite(
        client_command_id=client_command_id,
        subject_actor_id=subject,
        kind=_choice(payload, "kind", IDENTITY_KINDS),
        content=validation.content(payload),
        source_event_id=validation.optional_reference(payload, "sourceEventId"),
    )


def check_supersede(payload: Any, kinds: tuple[str, ...]) -> Supersede:
    payload = _strict(payload, {"clientCommandId", "kind", "content", "sourceEventId"})
    return Supersede(
        client_command_id=validation.client_command_id(payload),
        kind=_choice(payload, "kind", kinds, required=False),
        content=validation.content(payload),
        source_event_id=validation.optional_reference(payload, "sourceEventId"),
    )


def check_retract(payload: Any) -> str:
    payload = _strict(payload, {"clientCommandId"})
    return validation.client_command_id(payload)


# ---- list queries ----------------------------------------------------------------------------


def _int(payload: dict[str, Any], field: str, low: int, high: int, default: int) -> int:
    value = payload.get(field, default)
    if type(value) is not int or not low <= value <= high:
        raise invalid(f"{field} must be an integer from {low} to {high}")
    return value


def _bool(payload: dict[str, Any], field: str) -> bool:
    value = payload.get(field, False)
    if type(value) is not bool:
        raise invalid(f"{field} must be true or false")
    return value


def _query_text(payload: dict[str, Any]) -> str | None:
    value = payload.get("query")
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > MAX_QUERY:
        raise invalid(f"query must be a string of at most {MAX_QUERY} characters")
    return value.strip() or None


def _paging(payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "cursor": _int(payload, "cursor", 0, 2**31, 0),
        "limit": _int(payload, "limit", 1, LIST_MAX, LIST_DEFAULT),
        "include_history": _bool(payload, "includeHistory"),
    }


def from_query_string(params: dict[str, str], int_fields: set[str], bool_fields: set[str]) -> dict[str, Any]:
    """REST query parameters as JSON types: ``cursor=20`` → 20, ``includeHistory=true`` → True."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        if key in int_fields:
            if not value.isdigit():
                raise invalid(f"{key} must be a non-negative integer")
            out[key] = int(value)
        elif key in bool_fields:
            if value not in ("true", "false", "1", "0"):
                raise invalid(f"{key} must be true or false")
            out[key] = value in ("true", "1")
        else:
            out[key] = value
    return out


MEMORY_LIST_FIELDS = {
    "scopeType",
    "scopeId",
    "agentMemoryType",
    "kind",
    "authorActorId",
    "subjectActorId",
    "query",
    "cursor",
    "limit",
    "includeHistory",
}


def check_memory_list(params: dict[str, str]) -> ListQuery:
    """``GET /api/memory`` query parameters."""
    payload = from_query_string(params, {"cursor", "limit"}, {"includeHistory"})
    validation.reject_unknown_keys(payload, MEMORY_LIST_FIELDS)
    return ListQuery(
        scope_type=_choice(payload, "scopeType", SCOPE_TYPES, required=False),
        scope_id=payload.get("scopeId") or None,
        agent_memory_type=_choice(payload, "agentMemoryType", AGENT_MEMORY_TYPES, required=False),
        kind=payload.get("kind") or None,
        author_actor_id=payload.get("authorActorId") or None,
        subject_actor_id=payload.get("subjectActorId") or None,
        query=_query_text(payload),
        **_paging(payload),
    )


def check_memory_search(payload: Any) -> ListQuery:
    """MCP ``memory_search``; ``scope`` is ``{type, id?}``."""
    payload = _strict(
        payload or {},
        {"query", "scope", "agentMemoryType", "kind", "subjectActorId", "cursor", "limit", "includeHistory"},
    )
    scope_type = scope_id = None
    if payload.get("scope") is not None:
        scope = payload["scope"]
        if not isinstance(scope, dict):
            raise invalid("scope must be an object {type, id?}")
        validation.reject_unknown_keys(scope, {"type", "id"})
        scope_type = _choice(scope, "type", SCOPE_TYPES)
        scope_id = scope.get("id")
        if scope_id is not None and (not isinstance(scope_id, str) or len(scope_id) > MAX_SCOPE_ID):
            raise invalid("scope.id must be a string")
    return ListQuery(
        scope_type=scope_type,
        scope_id=scope_id,
        agent_memory_type=_choice(payload, "agentMemoryType", AGENT_MEMORY_TYPES, required=False),
        kind=_choice(payload, "kind", WRITABLE_MEMORY_KINDS + ("summary",), required=False),
        subject_actor_id=_actor(payload, "subjectActorId"),
        query=_query_text(payload),
        **_paging(payload),
    )


IDENTITY_LIST_FIELDS = {"subjectActorId", "authorActorId", "kind", "query", "cursor", "limit", "includeHistory"}


def check_identity_list(params: dict[str, str]) -> ListQuery:
    payload = from_query_string(params, {"cursor", "limit"}, {"includeHistory"})
    validation.reject_unknown_keys(payload, IDENTITY_LIST_FIELDS)
    return ListQuery(
        kind=payload.get("kind") or None,
        author_actor_id=payload.get("authorActorId") or None,
        subject_actor_id=payload.get("subjectActorId") or None,
        query=_query_text(payload),
        **_paging(payload),
    )


def check_identity_read(payload: Any) -> ListQuery:
    """MCP ``identity_read``: paging only; the subject is the caller."""
    payload = _strict(payload or {}, {"cursor", "limit", "includeHistory"})
    return ListQuery(**_paging(payload))

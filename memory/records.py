"""Shared pieces of the memory and identity actions: who writes, the public record shapes and the
durable ``memory.*`` / ``identity.*`` events (FEATURES §15).

A ``Writer`` is fixed by the channel a command arrived on, never by its body: the web binding writes
as ``user:web`` with sourceKind ``web``; an MCP binding writes as its agent with sourceKind ``mcp``;
the dated rollup writes as the owning agent with sourceKind ``automatic_rollup``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from groupx_site.core.errors import GroupXError, invalid
from groupx_site.core.ids import WEB_BINDING_ID, new_id
from groupx_site.core.ids import correlation_id as new_correlation_id
from memory.models import IdentityRecord, MemoryRecord
from rooms import events
from rooms.events import ActorRef, iso

MEMORY_ID_RE = re.compile(r"^mem_[A-Za-z0-9]{1,64}$")
IDENTITY_ID_RE = re.compile(r"^idn_[A-Za-z0-9]{1,64}$")


@dataclass(frozen=True)
class Writer:
    binding_id: str | None  # None: a system write with no command receipt (the dated rollup)
    actor: ActorRef
    source_kind: str
    correlation_id: str | None = None  # MCP: the caller's root correlation; else a fresh one
    causation_id: str | None = None  # MCP: the caller's turn

    @property
    def is_agent(self) -> bool:
        return self.actor.kind == "agent"

    def correlation(self) -> str:
        return self.correlation_id or new_correlation_id()


WEB_WRITER = Writer(WEB_BINDING_ID, events.WEB_USER, "web")


def new_memory_id() -> str:
    return new_id("mem")


def new_identity_id() -> str:
    return new_id("idn")


def _time(value) -> str | None:
    return iso(value) if value else None


def memory_json(record: MemoryRecord) -> dict[str, Any]:
    return {
        "memoryId": record.memory_id,
        "scope": {"type": record.scope_type, "id": record.scope_id},
        "agentMemoryType": record.agent_memory_type,
        "kind": record.kind,
        "authorActorId": record.author_actor_id,
        "subjectActorId": record.subject_actor_id,
        "content": record.content,
        "sourceEventId": record.source_event_id,
        "sourceKind": record.source_kind,
        "status": record.status,
        "supersedesMemoryId": record.supersedes_memory_id,
        "createdAt": _time(record.created_at),
        "retractedAt": _time(record.retracted_at),
    }


def identity_json(record: IdentityRecord) -> dict[str, Any]:
    return {
        "identityId": record.identity_id,
        "subjectActorId": record.subject_actor_id,
        "authorActorId": record.author_actor_id,
        "kind": record.kind,
        "content": record.content,
        "sourceEventId": record.source_event_id,
        "sourceKind": record.source_kind,
        "status": record.status,
        "supersedesIdentityId": record.supersedes_identity_id,
        "createdAt": _time(record.created_at),
        "retractedAt": _time(record.retracted_at),
    }


def record_event(
    *,
    event_type: str,
    writer: Writer,
    body: dict[str, Any],
    record_id: str,
    subject: str | None,
    source_event_id: str | None,
) -> None:
    """memory.remembered|superseded|retracted and identity.*: actor = the writer, ``to`` = the
    subject agent (nobody is woken: no Turn is queued), provenance built here, never from input."""
    provenance: dict[str, Any] = {"sourceKind": writer.source_kind, "authorActorId": writer.actor.actor_id}
    if subject:
        provenance["subjectActorId"] = subject
    if source_event_id:
        provenance["sourceEventId"] = source_event_id
    events.append_event(
        event_type=event_type,
        actor=writer.actor,
        to=[subject] if subject and subject.startswith("agent:") else [],
        body=body,
        correlation_id=writer.correlation(),
        causation_id=writer.causation_id,
        idempotency_key=f"{event_type}:{record_id}",
        provenance=provenance,
    )


def check_record_id(value: str, pattern: re.Pattern[str], what: str) -> str:
    if not pattern.match(value or ""):
        raise invalid(f"{what} is malformed")
    return value


def unknown_record(what: str, record_id: str) -> GroupXError:
    return GroupXError("UNKNOWN_TARGET", f"no {what} {record_id}", details={"unknownTargets": [record_id]})


def not_active(what: str, record_id: str, status: str) -> GroupXError:
    return GroupXError(
        "STORE_CONFLICT", f"only an active {what} can change; {record_id} is {status}", details={"status": status}
    )

"""Memory actions: remember, supersede, retract (FEATURES §15.1–15.3, PROTOCOL §10.4).

``remember_memory`` / ``supersede_memory`` / ``retract_memory`` are whole commands: body already
checked (``memory.inputs``), then ``rooms.commands.run_once``: one transaction holding the
idempotency receipt (binding + clientCommandId), the lookups, the write and its durable event. ``do_*`` functions only mutate and
must run inside ``transaction.atomic()`` (BEGIN IMMEDIATE: the caller holds the write lock, so the
status read before a compare-and-set cannot go stale).

Who may write an agent's core memory (docs/DECISIONS.md D14): that agent through its own
binding, or the web/operator. Another agent naming it in ``scope`` is refused with
INVALID_ENVELOPE: its binding is valid and matches the caller (so not MCP_BINDING_MISMATCH); the
request itself asks for something no agent input may ask, like any other disallowed scope.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import Q
from django.utils import timezone

from groupx_site.core.errors import GroupXError, invalid
from memory.inputs import MemoryWrite, Supersede
from memory.models import MemoryRecord
from memory.records import (
    MEMORY_ID_RE,
    Writer,
    check_record_id,
    memory_json,
    new_memory_id,
    not_active,
    record_event,
    unknown_record,
)
from rooms import commands, event_types
from rooms.actions import check_references_exist
from rooms.actor_models import Actor
from rooms.models import ROOM_ID, Event


def run_as(
    writer: Writer,
    client_command_id: str,
    command_type: str,
    canonical: dict[str, Any],
    run: Callable[[], dict[str, Any]],
) -> dict[str, Any]:
    """``rooms.commands.run_once`` under the writer's binding."""
    return commands.run_once(
        binding_id=writer.binding_id,
        client_command_id=client_command_id,
        command_type=command_type,
        canonical=canonical,
        run=run,
    )


# ---- checks (lookups; inside the command's transaction) ----------------------------------------


def check_actor(actor_id: str | None, *, agent: bool = False) -> None:
    if actor_id is None:
        return
    kind = Actor.objects.filter(actor_id=actor_id).values_list("kind", flat=True).first()
    if kind is None or (agent and kind != "agent"):
        raise GroupXError(
            "UNKNOWN_ACTOR", f"no {'agent' if agent else 'actor'} {actor_id}", details={"unknownTargets": [actor_id]}
        )


def check_scope(scope_type: str, scope_id: str) -> None:
    if scope_type == "agent":
        check_actor(scope_id, agent=True)
    elif scope_type == "room" and scope_id != ROOM_ID:
        raise GroupXError("UNKNOWN_TARGET", f"no room {scope_id}", details={"unknownTargets": [scope_id]})
    elif (
        scope_type == "correlation"
        and not Event.objects.filter(Q(correlation_id=scope_id) | Q(root_correlation_id=scope_id)).exists()
    ):
        raise GroupXError("UNKNOWN_TARGET", f"no correlation {scope_id}", details={"unknownTargets": [scope_id]})


def check_core_owner(writer: Writer, scope_type: str, scope_id: str) -> None:
    """An agent writes only its own agent-scope (core) memory; web and operator write any."""
    if writer.is_agent and scope_type == "agent" and scope_id != writer.actor.actor_id:
        raise invalid(
            "an agent may write only its own core memory; describe another agent in room memory "
            "with subjectActorId instead",
            scopeId=scope_id,
        )


def _active(memory_id: str) -> MemoryRecord:
    record = MemoryRecord.objects.filter(memory_id=memory_id).first()
    if record is None:
        raise unknown_record("memory record", memory_id)
    if record.status != "active":
        raise not_active("memory record", memory_id, record.status)
    return record


# ---- commands ---------------------------------------------------------------------------------


def remember_memory(writer: Writer, command: MemoryWrite, *, command_type: str = "memory.remember") -> dict[str, Any]:
    check_core_owner(writer, command.scope_type, command.scope_id)

    def run() -> dict[str, Any]:
        check_scope(command.scope_type, command.scope_id)
        check_actor(command.subject_actor_id)
        check_references_exist(command.source_event_id)
        record = do_remember_memory(
            writer,
            scope_type=command.scope_type,
            scope_id=command.scope_id,
            agent_memory_type=command.agent_memory_type,
            kind=command.kind,
            content=command.content,
            subject_actor_id=command.subject_actor_id,
            source_event_id=command.source_event_id,
        )
        return {"memory": memory_json(record)}

    return run_as(writer, command.client_command_id, command_type, command.canonical(), run)


def supersede_memory(writer: Writer, memory_id: str, command: Supersede) -> dict[str, Any]:
    check_record_id(memory_id, MEMORY_ID_RE, "memoryId")

    def run() -> dict[str, Any]:
        old = _active(memory_id)
        if old.agent_memory_type == "dated":
            raise invalid("dated memory is written only by its agent's daily rollup; retract it instead")
        check_core_owner(writer, old.scope_type, old.scope_id)
        check_references_exist(command.source_event_id)
        new = do_supersede_memory(
            writer, old, kind=command.kind or old.kind, content=command.content, source_event_id=command.source_event_id
        )
        if new is None:
            raise not_active("memory record", memory_id, "changed")
        return {"memory": memory_json(new)}

    canonical = {"memoryId": memory_id, **command.canonical()}
    return run_as(writer, command.client_command_id, "memory.supersede", canonical, run)


def retract_memory(writer: Writer, memory_id: str, client_command_id: str) -> dict[str, Any]:
    check_record_id(memory_id, MEMORY_ID_RE, "memoryId")

    def run() -> dict[str, Any]:
        record = _active(memory_id)
        check_core_owner(writer, record.scope_type, record.scope_id)
        return {"memory": memory_json(do_retract_memory(writer, record))}

    return run_as(writer, client_command_id, "memory.retract", {"memoryId": memory_id}, run)


# ---- mutations ----------------------------------------------------------------------------------


def do_remember_memory(
    writer: Writer,
    *,
    scope_type: str,
    scope_id: str,
    agent_memory_type: str | None,
    kind: str,
    content: str,
    subject_actor_id: str | None,
    source_event_id: str | None,
    supersedes: str | None = None,
) -> MemoryRecord:
    """Create an active record and append ``memory.remembered`` (``memory.superseded`` when it
    replaces ``supersedes``, which the caller has already moved out of ``active``)."""
    record = MemoryRecord.objects.create(
        memory_id=new_memory_id(),
        scope_type=scope_type,
        scope_id=scope_id,
        agent_memory_type=agent_memory_type,
        kind=kind,
        author_actor_id=writer.actor.actor_id,
        subject_actor_id=subject_actor_id,
        content=content,
        source_event_id=source_event_id,
        source_kind=writer.source_kind,
        status="active",
        supersedes_memory_id=supersedes,
        created_at=timezone.now(),
    )
    body: dict[str, Any] = {"record": memory_json(record)}
    if supersedes:
        body["supersededMemoryId"] = supersedes
    record_event(
        event_type=event_types.MEMORY_SUPERSEDED if supersedes else event_types.MEMORY_REMEMBERED,
        writer=writer,
        body=body,
        record_id=record.memory_id,
        subject=subject_actor_id,
        source_event_id=source_event_id,
    )
    return record


def do_supersede_memory(
    writer: Writer, old: MemoryRecord, *, kind: str, content: str, source_event_id: str | None
) -> MemoryRecord | None:
    """Compare-and-set the old record out of ``active``, then write its successor with the same
    scope, memory type and subject. None when the old record was no longer active."""
    moved = MemoryRecord.objects.filter(pk=old.pk, status="active").update(status="superseded")
    if moved != 1:
        return None
    return do_remember_memory(
        writer,
        scope_type=old.scope_type,
        scope_id=old.scope_id,
        agent_memory_type=old.agent_memory_type,
        kind=kind,
        content=content,
        subject_actor_id=old.subject_actor_id,
        source_event_id=source_event_id,
        supersedes=old.memory_id,
    )


def do_retract_memory(writer: Writer, record: MemoryRecord) -> MemoryRecord:
    """Tombstone: the content stays, the status says it no longer holds."""
    MemoryRecord.objects.filter(pk=record.pk, status="active").update(status="retracted", retracted_at=timezone.now())
    record.refresh_from_db()
    record_event(
        event_type=event_types.MEMORY_RETRACTED,
        writer=writer,
        body={"record": memory_json(record)},
        record_id=record.memory_id,
        subject=record.subject_actor_id,
        source_event_id=record.source_event_id,
    )
    return record

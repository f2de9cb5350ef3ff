"""The operator's memory and identity tools (FEATURES §13): the memory app's own commands, written
as ``user:assistant`` under ``binding:operator`` with ``sourceKind: operator``.

Unlike an agent, the operator names the record (``memoryId``, ``identityId``) or the subject
(``subjectActorId``) it acts on; the author is still fixed by the binding. ``memory_remember``
writes public memory only (room or correlation scope); an agent's core memory is
``agent_core_remember``; dated memory cannot be superseded (the memory app refuses it).
"""

from __future__ import annotations

from typing import Any

from assistant.operator_room import SOURCE_KIND, assistant_actor
from groupx_site.core.errors import invalid
from groupx_site.core.ids import OPERATOR_BINDING_ID
from memory import inputs, search
from memory.actions import remember_memory, retract_memory, supersede_memory
from memory.identity import remember_identity, retract_identity, supersede_identity
from memory.inputs import MemoryWrite
from memory.models import IDENTITY_KINDS
from memory.records import Writer
from rooms import validation


def writer() -> Writer:
    return Writer(OPERATOR_BINDING_ID, assistant_actor(), SOURCE_KIND)


def _record_id(payload: Any, field: str) -> tuple[str, dict[str, Any]]:
    """The record's id and the rest of the body (the memory app checks the rest as on REST)."""
    payload = validation.reject_sender_fields(payload)
    record_id = payload.get(field)
    if not isinstance(record_id, str) or not record_id:
        raise invalid(f"{field} is required")
    return record_id, {k: v for k, v in payload.items() if k != field}


def memory_search(payload: Any) -> dict[str, Any]:
    return search.list_memory(inputs.check_memory_search(payload))


def memory_remember(payload: Any) -> dict[str, Any]:
    command = inputs.check_memory_write(payload)
    if command.scope_type == "agent":
        raise invalid(
            "memory_remember writes public memory (room or correlation scope); an agent's core "
            "memory is agent_core_remember"
        )
    return remember_memory(writer(), command)


def memory_supersede(payload: Any) -> dict[str, Any]:
    memory_id, rest = _record_id(payload, "memoryId")
    return supersede_memory(writer(), memory_id, inputs.check_supersede(rest, inputs.WRITABLE_MEMORY_KINDS))


def memory_retract(payload: Any) -> dict[str, Any]:
    memory_id, rest = _record_id(payload, "memoryId")
    return retract_memory(writer(), memory_id, inputs.check_retract(rest))


def agent_core_remember(payload: Any) -> dict[str, Any]:
    subject, rest = _record_id(payload, "subjectActorId")
    if not validation.AGENT_ACTOR_RE.match(subject):
        raise invalid("subjectActorId must be an agent id such as agent:codex")
    command_id, kind, content, source = inputs.check_self_write(rest, inputs.WRITABLE_MEMORY_KINDS)
    command = MemoryWrite(command_id, "agent", subject, "core", kind, content, subject, source)
    return remember_memory(writer(), command, command_type="memory.core_remember")


def identity_search(payload: Any) -> dict[str, Any]:
    payload = validation.reject_sender_fields(payload or {})
    as_query = {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in payload.items()}
    return search.list_identity(inputs.check_identity_list(as_query))


def identity_remember_for(payload: Any) -> dict[str, Any]:
    return remember_identity(writer(), inputs.check_identity_write(payload))


def identity_supersede(payload: Any) -> dict[str, Any]:
    identity_id, rest = _record_id(payload, "identityId")
    return supersede_identity(writer(), identity_id, inputs.check_supersede(rest, IDENTITY_KINDS))


def identity_retract(payload: Any) -> dict[str, Any]:
    identity_id, rest = _record_id(payload, "identityId")
    return retract_identity(writer(), identity_id, inputs.check_retract(rest))

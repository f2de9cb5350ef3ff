"""The member MCP memory and identity tools (FEATURES §11, PROTOCOL §12): (binding, payload) → dict.

The caller is the binding's agent during its active Turn (``resolve_caller``); the author is always
that agent and the sourceKind ``mcp``. ``core_memory_remember`` and ``identity_remember`` take no
scope, subject or author at all: the binding fixes them to the caller.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from memory import inputs, search
from memory.actions import remember_memory
from memory.identity import remember_identity
from memory.inputs import IdentityWrite, MemoryWrite
from memory.models import IDENTITY_KINDS
from memory.records import Writer
from turns.member_actions import resolve_caller


def caller_writer(binding_id: str) -> Writer:
    caller = resolve_caller(binding_id)
    return Writer(
        binding_id,
        caller.actor,
        "mcp",
        correlation_id=caller.turn.root_correlation_id,
        causation_id=caller.turn.turn_id,
    )


def memory_search(binding_id: str, payload: Any) -> dict[str, Any]:
    resolve_caller(binding_id)
    return search.list_memory(inputs.check_memory_search(payload))


def memory_remember(binding_id: str, payload: Any) -> dict[str, Any]:
    writer = caller_writer(binding_id)
    return remember_memory(writer, inputs.check_memory_write(payload))


def core_memory_remember(binding_id: str, payload: Any) -> dict[str, Any]:
    writer = caller_writer(binding_id)
    me = writer.actor.actor_id
    command_id, kind, content, source = inputs.check_self_write(payload, inputs.WRITABLE_MEMORY_KINDS)
    command = MemoryWrite(command_id, "agent", me, "core", kind, content, me, source)
    return remember_memory(writer, command, command_type="memory.core_remember")


def identity_read(binding_id: str, payload: Any) -> dict[str, Any]:
    caller = resolve_caller(binding_id)
    query = inputs.check_identity_read(payload)
    return search.list_identity(replace(query, subject_actor_id=caller.actor.actor_id))


def identity_remember(binding_id: str, payload: Any) -> dict[str, Any]:
    writer = caller_writer(binding_id)
    command_id, kind, content, source = inputs.check_self_write(payload, IDENTITY_KINDS)
    return remember_identity(writer, IdentityWrite(command_id, writer.actor.actor_id, kind, content, source))

"""The operator tools of ``/mcp/operator`` (FEATURES §13, PROTOCOL §12): each one's wire name,
description, input schema and handler, declared together like the member tools
(``agents/mcp/tools.py``, whose registrar and schema parts this reuses).

The caller is always ``binding:operator`` (author ``user:assistant``); no tool needs a Turn, and
there is no watch or steer. The schemas carry the limits the actions enforce; GroupX still checks
every call itself and answers a bad one with the protocol's code.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from agents.mcp.tools import (
    _COMMAND_ID,
    _CONTENT,
    _LIST_LIMIT,
    _SCOPE,
    _SCOPE_FILTER,
    _SUPERVISION,
    _TO,
    tool_registrar,
)
from agents.mcp.tools import MemberTool as OperatorTool
from agents.restart import restart_agent
from assistant import operator_memory, operator_room, setup_access
from groupx_site.core.errors import invalid
from groupx_site.core.ids import OPERATOR_BINDING_ID
from groupx_site.store import db
from memory import engine
from memory.models import AGENT_MEMORY_TYPES, IDENTITY_KINDS
from memory.usage import usage
from rooms import validation
from turns import asks
from turns.member_actions import bounded_int

OPERATOR_TOOLS: dict[str, OperatorTool] = {}  # in declaration order, which is the order of tools/list
operator_tool = tool_registrar(OPERATOR_TOOLS)

MAX_ASK_MS = 3_600_000
POLL_NOTE = (
    "Still running. Do not dispatch again: poll read (afterSeq) later for the workers' answers, "
    "or roster for their Turns."
)

INSTRUCTIONS = (
    "GroupX operator tools for the room assistant. worker_dispatch and worker_ask give agents work (an "
    "operator.dispatch, no chat bubble); worker_ask waits for the answers and says pending when they are "
    "not in yet — then poll read instead of asking again. send speaks to the room in public. The author "
    "is always the assistant: never pass from/actor."
)

_RECORD_ID = {"type": "string", "minLength": 1}
_KIND = {"enum": ["fact", "decision", "preference", "instruction", "constraint", "note"]}
_AGENT = {"type": "string", "pattern": validation.AGENT_ACTOR_RE.pattern}
_DISPATCH = {"to": _TO, "content": _CONTENT, "clientCommandId": _COMMAND_ID, "supervision": _SUPERVISION}


# ---- the room ------------------------------------------------------------------------------------
@operator_tool(
    "send",
    (
        "Post a public message in the room as the assistant (and wake the agents in to, if any; "
        "supervision pairs observers that watch and may steer them)."
    ),
    {
        "to": {**_TO, "minItems": 0},
        "content": _CONTENT,
        "replyToEventId": {"type": ["string", "null"]},
        "clientCommandId": _COMMAND_ID,
        "supervision": _SUPERVISION,
    },
    ("to", "content", "clientCommandId"),
)
def send(binding_id, payload):
    return operator_room.operator_send(payload)


@operator_tool(
    "read",
    (
        "The room's public events (messages, dispatches, supervision, ended Turns, resets, sessions), "
        f"the latest {operator_room.READ_DEFAULT_LIMIT} or those after afterSeq; content is cut to "
        f"about {operator_room.READ_CONTENT_CHARACTERS} characters."
    ),
    {
        "correlationId": {"type": "string"},
        "afterSeq": {"type": "integer", "minimum": 0},
        "limit": {"type": "integer", "minimum": 1, "maximum": operator_room.READ_MAX_LIMIT},
    },
)
def read(binding_id, payload):
    return operator_room.operator_read(payload)


@operator_tool("roster", "The agents (enabled, cwd, health), the active Turns and the supervision pairs.", {})
def roster(binding_id, payload):
    validation.reject_unknown_keys(validation.reject_sender_fields(payload or {}), set())
    return operator_room.roster()


@operator_tool(
    "worker_dispatch",
    (
        "Give agents work: a durable operator.dispatch (no chat bubble) and one Turn each; "
        "returns at once. supervision pairs observers that watch and may steer them."
    ),
    _DISPATCH,
    ("to", "content", "clientCommandId"),
)
def worker_dispatch(binding_id, payload):
    return operator_room.dispatch(operator_room.check_dispatch(payload), "worker_dispatch")


@operator_tool(
    "worker_ask",
    (
        "worker_dispatch, then wait (timeoutMs, at most one hour) for the answers. Pending "
        "results mean: poll read later; do not dispatch again."
    ),
    {**_DISPATCH, "timeoutMs": {"type": "integer", "minimum": 1, "maximum": MAX_ASK_MS}},
    ("to", "content", "clientCommandId"),
)
async def worker_ask(binding_id, payload):
    command = operator_room.check_dispatch(payload, frozenset({"timeoutMs"}))
    wait_ms = bounded_int(payload, "timeoutMs", 1, MAX_ASK_MS, min(settings.GROUPX_CONFIG.timeouts.askMs, MAX_ASK_MS))
    sent = await db.write(operator_room.dispatch)(command, "worker_ask")
    result = await asks.wait_for_children(sent["dispatchEventId"], wait_ms, return_when_queued=False)
    for entry in result["results"]:
        if entry["status"] == "pending":
            entry["note"] = POLL_NOTE
    return {**result, "dispatchEventId": sent["dispatchEventId"]}


@operator_tool(
    "dispatch_event",
    (
        "Route an existing room message to agents again, keeping its author and event "
        "(not a watch brief or an operator dispatch)."
    ),
    {"sourceEventId": {"type": "string"}, "to": _TO, "clientCommandId": _COMMAND_ID, "supervision": _SUPERVISION},
    ("sourceEventId", "to", "clientCommandId"),
)
def dispatch_event(binding_id, payload):
    return operator_room.dispatch_event(operator_room.check_dispatch_event(payload))


@operator_tool(
    "supervision_status",
    "A supervision pair's Turns, their states and steer counts.",
    {"pairId": {"type": "string"}, "correlationId": {"type": "string"}},
)
def supervision_status(binding_id, payload):
    return operator_room.supervision_status(payload)


# ---- Turns and agents ----------------------------------------------------------------------------
@operator_tool(
    "turn_cancel",
    "Cancel one Turn.",
    {"turnId": {"type": "string"}, "clientCommandId": _COMMAND_ID},
    ("turnId", "clientCommandId"),
)
def turn_cancel(binding_id, payload):
    return operator_room.turn_cancel(payload)


@operator_tool(
    "turns_cancel",
    "Cancel every active Turn, or those of the agents in to.",
    {"to": {**_TO, "description": "Agent ids (no @all)."}, "clientCommandId": _COMMAND_ID},
    ("clientCommandId",),
)
def turns_cancel(binding_id, payload):
    return operator_room.turns_cancel(payload)


@operator_tool(
    "agent_restart",
    "Restart one agent's CLI now (its running Turn is interrupted; queued ones wait).",
    {"actorId": _AGENT, "clientCommandId": _COMMAND_ID},
    ("actorId", "clientCommandId"),
)
def agent_restart(binding_id, payload):
    payload = validation.reject_sender_fields(payload)
    actor_id = payload.get("actorId")
    if not isinstance(actor_id, str):
        validation.reject_unknown_keys(payload, {"actorId", "clientCommandId"})
        raise invalid("actorId is required")
    return restart_agent(OPERATOR_BINDING_ID, actor_id, {k: v for k, v in payload.items() if k != "actorId"})


# ---- context -------------------------------------------------------------------------------------
@operator_tool("context_usage", "The room's context usage in characters.", {})
def context_usage(binding_id, payload):
    validation.reject_unknown_keys(validation.reject_sender_fields(payload or {}), set())
    return usage()


@operator_tool(
    "context_compact",
    "Compact all but the last room messages into the checkpoint summary.",
    {"clientCommandId": _COMMAND_ID},
    ("clientCommandId",),
)
async def context_compact(binding_id, payload):
    return await engine.accept_compact(OPERATOR_BINDING_ID, engine.check_compact(payload))


@operator_tool(
    "context_reset",
    (
        "Move the room's context floor to now (the transcript is kept); "
        "resetNativeSessions also restarts the agents' native sessions fresh."
    ),
    {"clientCommandId": _COMMAND_ID, "resetNativeSessions": {"type": "boolean"}},
    ("clientCommandId",),
)
def context_reset(binding_id, payload):
    return engine.accept_reset(
        OPERATOR_BINDING_ID,
        operator_room.SOURCE_KIND,
        engine.check_reset(payload),
        actor=operator_room.assistant_actor(),
    )


# ---- memory and identity -------------------------------------------------------------------------
@operator_tool(
    "memory_search",
    "Search memory records (newest first).",
    {
        "query": {"type": "string"},
        "scope": _SCOPE_FILTER,
        "agentMemoryType": {"enum": list(AGENT_MEMORY_TYPES)},
        "kind": {"type": "string"},
        "subjectActorId": {"type": "string"},
        "cursor": {"type": "integer", "minimum": 0},
        "limit": _LIST_LIMIT,
        "includeHistory": {"type": "boolean"},
    },
)
def memory_search(binding_id, payload):
    return operator_memory.memory_search(payload)


@operator_tool(
    "memory_remember",
    "Save a public memory record (room or correlation scope).",
    {
        "clientCommandId": _COMMAND_ID,
        "scope": _SCOPE,
        "kind": _KIND,
        "content": _CONTENT,
        "subjectActorId": {"type": "string"},
        "sourceEventId": {"type": "string"},
    },
    ("clientCommandId", "scope", "kind", "content"),
)
def memory_remember(binding_id, payload):
    return operator_memory.memory_remember(payload)


@operator_tool(
    "memory_supersede",
    "Write a new version of a public or core memory record (not dated memory).",
    {
        "memoryId": _RECORD_ID,
        "clientCommandId": _COMMAND_ID,
        "kind": _KIND,
        "content": _CONTENT,
        "sourceEventId": {"type": "string"},
    },
    ("memoryId", "clientCommandId", "content"),
)
def memory_supersede(binding_id, payload):
    return operator_memory.memory_supersede(payload)


@operator_tool(
    "memory_retract",
    "Retract a public, core or dated memory record.",
    {"memoryId": _RECORD_ID, "clientCommandId": _COMMAND_ID},
    ("memoryId", "clientCommandId"),
)
def memory_retract(binding_id, payload):
    return operator_memory.memory_retract(payload)


@operator_tool(
    "agent_core_remember",
    "Add to an agent's core memory (shown at the top of its context).",
    {
        "subjectActorId": _AGENT,
        "clientCommandId": _COMMAND_ID,
        "kind": _KIND,
        "content": _CONTENT,
        "sourceEventId": {"type": "string"},
    },
    ("subjectActorId", "clientCommandId", "kind", "content"),
)
def agent_core_remember(binding_id, payload):
    return operator_memory.agent_core_remember(payload)


@operator_tool(
    "identity_search",
    "List identity records about agents.",
    {
        "subjectActorId": {"type": "string"},
        "authorActorId": {"type": "string"},
        "kind": {"type": "string"},
        "query": {"type": "string"},
        "cursor": {"type": "integer", "minimum": 0},
        "limit": _LIST_LIMIT,
        "includeHistory": {"type": "boolean"},
    },
)
def identity_search(binding_id, payload):
    return operator_memory.identity_search(payload)


@operator_tool(
    "identity_remember_for",
    "Record something about an agent's identity.",
    {
        "subjectActorId": _AGENT,
        "clientCommandId": _COMMAND_ID,
        "kind": {"enum": list(IDENTITY_KINDS)},
        "content": _CONTENT,
        "sourceEventId": {"type": "string"},
    },
    ("subjectActorId", "clientCommandId", "kind", "content"),
)
def identity_remember_for(binding_id, payload):
    return operator_memory.identity_remember_for(payload)


@operator_tool(
    "identity_supersede",
    "Write a new version of an identity record.",
    {
        "identityId": _RECORD_ID,
        "clientCommandId": _COMMAND_ID,
        "kind": {"enum": list(IDENTITY_KINDS)},
        "content": _CONTENT,
        "sourceEventId": {"type": "string"},
    },
    ("identityId", "clientCommandId", "content"),
)
def identity_supersede(binding_id, payload):
    return operator_memory.identity_supersede(payload)


@operator_tool(
    "identity_retract",
    "Retract an identity record.",
    {"identityId": _RECORD_ID, "clientCommandId": _COMMAND_ID},
    ("identityId", "clientCommandId"),
)
def identity_retract(binding_id, payload):
    return operator_memory.identity_retract(payload)


# ---- setup ---------------------------------------------------------------------------------------
@operator_tool("setup_read", "The saved groupx.json as the setup page's draft.", {})
def setup_read(binding_id, payload):
    validation.reject_unknown_keys(validation.reject_sender_fields(payload or {}), set())
    return setup_access.read()


@operator_tool(
    "setup_save",
    "Save the setup draft {config} to groupx.json; it takes effect after a restart.",
    {"config": {"type": "object"}},
    ("config",),
)
def setup_save(binding_id, payload: Any):
    return setup_access.save(payload)  # this brain runs the old settings until GroupX restarts

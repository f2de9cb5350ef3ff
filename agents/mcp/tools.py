"""The member tools (FEATURES §11): each one's wire name, description, input schema and handler,
registered together by ``@member_tool``.

Names have no dots (the protocol writes ``groupx.send``). The schemas describe the inputs for the
CLI's model and are built from the limits the actions enforce (message size, targets, command ids,
wait times, list sizes), so the model is never told a limit GroupX does not apply. GroupX still
validates every call itself, so a bad input comes back as the protocol's JSON error
(``INVALID_ENVELOPE``, ``SENDER_FIELD_FORBIDDEN``…), never as SDK validation text.
Descriptions state effects only: no coordinator, topology or number of rounds is implied.

Adding a tool: write its action (``(binding_id, payload) -> dict``) in the app that owns it, then
declare it here with ``@member_tool``. ``agents/mcp/server.py`` lists and calls what is declared.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agents.mcp import memory_tools
from groupx_site.store import db
from memory import inputs as memory_inputs
from memory.models import AGENT_MEMORY_TYPES, IDENTITY_KINDS, SCOPE_TYPES
from rooms import validation
from setup_wizard.config import MESSAGE_CHARACTERS
from turns import asks, member_actions, supervision
from turns import steer as steer_tool
from turns import watch as watch_tool

Handler = Callable[[str | None, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class MemberTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Handler  # a coroutine function: (binding id, arguments) → the result body


TOOLS: dict[str, MemberTool] = {}  # in declaration order, which is the order of tools/list


def tool_registrar(registry: dict[str, MemberTool]):
    """The decorator that declares a tool in ``registry`` (the member tools here; the operator's
    in ``assistant/mcp/tools.py``)."""

    def declare(name: str, description: str, properties: dict[str, Any], required: tuple[str, ...] = ()):
        """Register the decorated action as the tool ``name``. A plain function runs on the store's
        writer thread (``groupx_site.store.db.write``); a coroutine function (one that waits, like
        ask) is awaited as it is and reaches the store itself."""

        def register(action: Callable[..., Any]) -> Callable[..., Any]:
            if name in registry or "." in name:
                raise ValueError(f"tool {name!r} is declared twice or has a dot in its name")
            handler = action if inspect.iscoroutinefunction(action) else db.write(action)
            schema = {
                "type": "object",
                "properties": properties,
                "required": list(required),
                "additionalProperties": False,
            }
            registry[name] = MemberTool(name, description, schema, handler)
            return action

        return register

    return declare


member_tool = tool_registrar(TOOLS)


WAIT_SECONDS = asks.MAX_WAIT_MS // 1000

INSTRUCTIONS = (
    "GroupX room tools. Every message is public to the room. send and ask wake the agents you name "
    "(their own Turn, queued behind any work they already have); publish posts without waking anyone; "
    f"ask also waits (at most {WAIT_SECONDS} s) for the answers and returns pending when a target is busy — then use "
    "collect with the same messageEventId instead of asking again; read shows what happened in your "
    "chain since a seq (your context was frozen when your Turn started). Your final answer to the "
    "current Turn is posted to the room automatically. The sender is always you: never pass from/actor."
)

# ---- schema parts, from the limits the actions enforce ---------------------------------------------
_TO = {
    "type": "array",
    "minItems": 1,
    "maxItems": validation.MAX_TARGETS,
    "items": {"type": "string"},
    "description": 'Agent ids such as "agent:codex", or ["@all"] for every other agent.',
}
_CONTENT = {"type": "string", "minLength": 1, "maxLength": MESSAGE_CHARACTERS}
_COMMAND_ID = {
    "type": "string",
    "minLength": 1,
    "maxLength": validation.MAX_CLIENT_COMMAND_ID,
    "description": "Your idempotency key: a retry with the same id never sends twice.",
}
_REPLY_TO = {"type": ["string", "null"], "description": "Event id this message answers (default: your Turn's source)."}
_TIMEOUT = {"type": "integer", "minimum": 1, "maximum": asks.MAX_WAIT_MS}
_MEMORY_KIND = {"enum": list(memory_inputs.WRITABLE_MEMORY_KINDS)}
_SCOPE = {
    "type": "object",
    "properties": {"type": {"enum": list(SCOPE_TYPES)}, "id": {"type": "string"}},
    "required": ["type", "id"],
    "additionalProperties": False,
    "description": 'e.g. {"type": "room", "id": "room:main"} or {"type": "agent", "id": "<your agent id>"}',
}
_SCOPE_FILTER = {
    "type": "object",
    "properties": {"type": {"enum": list(SCOPE_TYPES)}, "id": {"type": "string"}},
    "required": ["type"],
    "additionalProperties": False,
}
_READ_LIMIT = {"type": "integer", "minimum": 1, "maximum": member_actions.READ_MAX_LIMIT}
_LIST_LIMIT = {"type": "integer", "minimum": 1, "maximum": memory_inputs.LIST_MAX}
_CURSOR = {"type": "integer", "minimum": 0}
_SUPERVISION = {
    "type": "object",
    "additionalProperties": False,
    "required": ["observers", "mode"],
    "properties": {
        "observers": {
            "type": "array",
            "minItems": 1,
            "maxItems": supervision.MAX_OBSERVERS,
            "items": {"type": "string"},
        },
        "mode": {"enum": [supervision.MODE]},
    },
    "description": (
        "Optional: agents (not in to, not you) that watch the workers live and may steer "
        "them; each gets its own Watch Turn."
    ),
}


# ---- the room ------------------------------------------------------------------------------------
@member_tool(
    "send",
    "Post a public message and queue a Turn for each target; returns at once.",
    {
        "to": _TO,
        "content": _CONTENT,
        "replyToEventId": _REPLY_TO,
        "clientCommandId": _COMMAND_ID,
        "supervision": _SUPERVISION,
    },
    ("to", "content", "clientCommandId"),
)
def send(binding_id, payload):
    return member_actions.member_send(binding_id, payload)


@member_tool(
    "publish",
    "Post a public message (progress, a question, a conclusion) that wakes nobody.",
    {"content": _CONTENT, "replyToEventId": _REPLY_TO, "clientCommandId": _COMMAND_ID},
    ("content", "clientCommandId"),
)
def publish(binding_id, payload):
    return member_actions.member_publish(binding_id, payload)


@member_tool(
    "ask",
    (
        f"Post a public question to agents and wait (at most {WAIT_SECONDS} s) for their answers. "
        "Returns state=pending at once if a target is busy; then call collect with the messageEventId."
    ),
    {
        "to": _TO,
        "content": _CONTENT,
        "replyToEventId": _REPLY_TO,
        "clientCommandId": _COMMAND_ID,
        "timeoutMs": _TIMEOUT,
        "cancelOnTimeout": {"type": "boolean"},
        "supervision": _SUPERVISION,
    },
    ("to", "content", "clientCommandId"),
)
async def ask(binding_id, payload):
    return await asks.member_ask(binding_id, payload)


@member_tool(
    "collect",
    f"Wait again (at most {WAIT_SECONDS} s) for the answers to an earlier ask, by its messageEventId.",
    {"messageEventId": {"type": "string"}, "timeoutMs": _TIMEOUT},
    ("messageEventId",),
)
async def collect(binding_id, payload):
    return await asks.member_collect(binding_id, payload)


@member_tool(
    "read",
    "Read the public events and Turn states of a correlation (default: your chain) after a seq.",
    {"correlationId": {"type": "string"}, "afterSeq": {"type": "integer", "minimum": 0}, "limit": _READ_LIMIT},
)
def read(binding_id, payload):
    return member_actions.member_read(binding_id, payload)


# ---- supervision (FEATURES §12): listed in every session (a CLI reads the list once); outside an
# observer's Watch Turn both answer SUPERVISION_WATCH_REQUIRED ------------------------------------
@member_tool(
    "watch",
    (
        "Supervision only (your Watch Turn): wait for the next milestone of the worker you observe "
        "(started, a tool, more reply, ended), or until=terminal for its end; returns a snapshot."
    ),
    {
        "subjectTurnId": {"type": "string"},
        "afterSeq": _CURSOR,
        "until": {"enum": list(watch_tool.UNTIL)},
        "timeoutMs": {"type": "integer", "minimum": 1, "maximum": watch_tool.MAX_WATCH_MS},
    },
)
async def watch(binding_id, payload):
    return await watch_tool.member_watch(binding_id, payload)


@member_tool(
    "steer",
    (
        "Supervision only (your Watch Turn): redirect the worker with public guidance. nudge queues "
        "it after the worker's current Turn; interrupt cancels that whole Turn first. A public reason "
        "is required; each worker Turn can be steered a limited number of times."
    ),
    {
        "subjectTurnId": {"type": "string"},
        "action": {"enum": list(steer_tool.ACTIONS)},
        "reason": {"type": "string", "minLength": 1, "maxLength": steer_tool.MAX_REASON},
        "content": _CONTENT,
        "clientCommandId": _COMMAND_ID,
    },
    ("action", "reason", "content", "clientCommandId"),
)
def steer(binding_id, payload):
    return steer_tool.member_steer(binding_id, payload)


# ---- memory and identity (FEATURES §11) ----------------------------------------------------------
# Author, and for the self tools scope and subject too, are fixed by the binding; none is an input.
@member_tool(
    "memory_search",
    (
        "Search the room's memory records (newest first): public room/correlation memory and "
        "agent memory. query matches words in the content; nextCursor pages on."
    ),
    {
        "query": {"type": "string", "maxLength": memory_inputs.MAX_QUERY},
        "scope": _SCOPE_FILTER,
        "agentMemoryType": {"enum": list(AGENT_MEMORY_TYPES)},
        "kind": {"type": "string"},
        "subjectActorId": {"type": "string"},
        "cursor": _CURSOR,
        "limit": _LIST_LIMIT,
        "includeHistory": {"type": "boolean"},
    },
)
def memory_search(binding_id, payload):
    return memory_tools.memory_search(binding_id, payload)


@member_tool(
    "memory_remember",
    (
        "Save a durable memory record. scope room:main is public room memory; a correlation "
        "scope ties it to one conversation; scope agent:<you> is your own core memory (other "
        "agents' core memory is not writable). Use subjectActorId when it is about someone."
    ),
    {
        "clientCommandId": _COMMAND_ID,
        "scope": _SCOPE,
        "kind": _MEMORY_KIND,
        "content": _CONTENT,
        "subjectActorId": {"type": "string"},
        "sourceEventId": {"type": "string"},
    },
    ("clientCommandId", "scope", "kind", "content"),
)
def memory_remember(binding_id, payload):
    return memory_tools.memory_remember(binding_id, payload)


@member_tool(
    "core_memory_remember",
    "Add to your own core memory: a small, long-lived set shown at the top of your context.",
    {"clientCommandId": _COMMAND_ID, "kind": _MEMORY_KIND, "content": _CONTENT, "sourceEventId": {"type": "string"}},
    ("clientCommandId", "kind", "content"),
)
def core_memory_remember(binding_id, payload):
    return memory_tools.core_memory_remember(binding_id, payload)


@member_tool(
    "identity_read",
    "Read the identity records about you (your own notes and what others recorded).",
    {"cursor": _CURSOR, "limit": _LIST_LIMIT, "includeHistory": {"type": "boolean"}},
)
def identity_read(binding_id, payload):
    return memory_tools.identity_read(binding_id, payload)


@member_tool(
    "identity_remember",
    "Record something about yourself (a preference, instruction, constraint or note).",
    {
        "clientCommandId": _COMMAND_ID,
        "kind": {"enum": list(IDENTITY_KINDS)},
        "content": _CONTENT,
        "sourceEventId": {"type": "string"},
    },
    ("clientCommandId", "kind", "content"),
)
def identity_remember(binding_id, payload):
    return memory_tools.identity_remember(binding_id, payload)

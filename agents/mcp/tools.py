"""The member tools' wire names, descriptions and input schemas (FEATURES §11).

Names have no dots (the protocol writes ``groupx.send``). The schemas describe the inputs for the
CLI's model; GroupX validates every call itself so that a bad input comes back as the protocol's
JSON error (``INVALID_ENVELOPE``, ``SENDER_FIELD_FORBIDDEN``…), never as SDK validation text.
Descriptions state effects only: no coordinator, topology or number of rounds is implied.
"""

from __future__ import annotations

from typing import Any

INSTRUCTIONS = (
    "GroupX room tools. Every message is public to the room. send and ask wake the agents you name "
    "(their own Turn, queued behind any work they already have); publish posts without waking anyone; "
    "ask also waits (at most 60 s) for the answers and returns pending when a target is busy — then use "
    "collect with the same messageEventId instead of asking again; read shows what happened in your "
    "chain since a seq (your context was frozen when your Turn started). Your final answer to the "
    "current Turn is posted to the room automatically. The sender is always you: never pass from/actor."
)

_TO = {"type": "array", "minItems": 1, "maxItems": 32, "items": {"type": "string"},
       "description": 'Agent ids such as "agent:codex", or ["@all"] for every other agent.'}
_CONTENT = {"type": "string", "minLength": 1, "maxLength": 131072}
_COMMAND_ID = {"type": "string", "minLength": 1, "maxLength": 128,
               "description": "Your idempotency key: a retry with the same id never sends twice."}
_REPLY_TO = {"type": ["string", "null"], "description": "Event id this message answers (default: your Turn's source)."}
_TIMEOUT = {"type": "integer", "minimum": 1, "maximum": 60000}
_MEMORY_KIND = {"enum": ["fact", "decision", "preference", "instruction", "constraint", "note"]}
_SCOPE = {"type": "object", "properties": {"type": {"enum": ["room", "agent", "correlation"]}, "id": {"type": "string"}},
          "required": ["type", "id"], "additionalProperties": False,
          "description": 'e.g. {"type": "room", "id": "room:main"} or {"type": "agent", "id": "<your agent id>"}'}
_SCOPE_FILTER = {"type": "object", "properties": {"type": {"enum": ["room", "agent", "correlation"]},
                                                  "id": {"type": "string"}},
                 "required": ["type"], "additionalProperties": False}


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


TOOLS: dict[str, dict[str, Any]] = {
    "send": {
        "description": "Post a public message and queue a Turn for each target; returns at once.",
        "inputSchema": _object({"to": _TO, "content": _CONTENT, "replyToEventId": _REPLY_TO,
                                "clientCommandId": _COMMAND_ID}, ["to", "content", "clientCommandId"]),
    },
    "publish": {
        "description": "Post a public message (progress, a question, a conclusion) that wakes nobody.",
        "inputSchema": _object({"content": _CONTENT, "replyToEventId": _REPLY_TO, "clientCommandId": _COMMAND_ID},
                               ["content", "clientCommandId"]),
    },
    "ask": {
        "description": ("Post a public question to agents and wait (at most 60 s) for their answers. Returns "
                        "state=pending at once if a target is busy; then call collect with the messageEventId."),
        "inputSchema": _object({"to": _TO, "content": _CONTENT, "replyToEventId": _REPLY_TO,
                                "clientCommandId": _COMMAND_ID, "timeoutMs": _TIMEOUT,
                                "cancelOnTimeout": {"type": "boolean"}}, ["to", "content", "clientCommandId"]),
    },
    "collect": {
        "description": "Wait again (at most 60 s) for the answers to an earlier ask, by its messageEventId.",
        "inputSchema": _object({"messageEventId": {"type": "string"}, "timeoutMs": _TIMEOUT}, ["messageEventId"]),
    },
    "read": {
        "description": "Read the public events and Turn states of a correlation (default: your chain) after a seq.",
        "inputSchema": _object({"correlationId": {"type": "string"}, "afterSeq": {"type": "integer", "minimum": 0},
                                "limit": {"type": "integer", "minimum": 1, "maximum": 500}}, []),
    },
    "watch": {
        "description": "Supervision only: observe the worker Turn you were paired with.",
        "inputSchema": _object({"subjectTurnId": {"type": "string"}, "afterSeq": {"type": "integer"},
                                "until": {"enum": ["next_milestone", "terminal"]}, "timeoutMs": _TIMEOUT}, []),
    },
    "steer": {
        "description": "Supervision only: nudge or interrupt the worker Turn you were paired with.",
        "inputSchema": _object({"subjectTurnId": {"type": "string"}, "action": {"enum": ["nudge", "interrupt"]},
                                "reason": {"type": "string"}, "content": _CONTENT, "clientCommandId": _COMMAND_ID},
                               ["action", "reason", "content", "clientCommandId"]),
    },
    # Memory and identity (issue 7, FEATURES §11): author, and for the self tools scope and
    # subject too, are fixed by the binding; none of them is an input.
    "memory_search": {
        "description": ("Search the room's memory records (newest first): public room/correlation memory and "
                        "agent memory. query matches words in the content; nextCursor pages on."),
        "inputSchema": _object({"query": {"type": "string", "maxLength": 1024}, "scope": _SCOPE_FILTER,
                                "agentMemoryType": {"enum": ["core", "dated"]}, "kind": {"type": "string"},
                                "subjectActorId": {"type": "string"}, "cursor": {"type": "integer", "minimum": 0},
                                "limit": {"type": "integer", "minimum": 1, "maximum": 500},
                                "includeHistory": {"type": "boolean"}}, []),
    },
    "memory_remember": {
        "description": ("Save a durable memory record. scope room:main is public room memory; a correlation "
                        "scope ties it to one conversation; scope agent:<you> is your own core memory (other "
                        "agents' core memory is not writable). Use subjectActorId when it is about someone."),
        "inputSchema": _object({"clientCommandId": _COMMAND_ID, "scope": _SCOPE, "kind": _MEMORY_KIND,
                                "content": _CONTENT, "subjectActorId": {"type": "string"},
                                "sourceEventId": {"type": "string"}}, ["clientCommandId", "scope", "kind", "content"]),
    },
    "core_memory_remember": {
        "description": "Add to your own core memory: a small, long-lived set shown at the top of your context.",
        "inputSchema": _object({"clientCommandId": _COMMAND_ID, "kind": _MEMORY_KIND, "content": _CONTENT,
                                "sourceEventId": {"type": "string"}}, ["clientCommandId", "kind", "content"]),
    },
    "identity_read": {
        "description": "Read the identity records about you (your own notes and what others recorded).",
        "inputSchema": _object({"cursor": {"type": "integer", "minimum": 0},
                                "limit": {"type": "integer", "minimum": 1, "maximum": 500},
                                "includeHistory": {"type": "boolean"}}, []),
    },
    "identity_remember": {
        "description": "Record something about yourself (a preference, instruction, constraint or note).",
        "inputSchema": _object({"clientCommandId": _COMMAND_ID,
                                "kind": {"enum": ["preference", "instruction", "constraint", "note"]},
                                "content": _CONTENT, "sourceEventId": {"type": "string"}},
                               ["clientCommandId", "kind", "content"]),
    },
}

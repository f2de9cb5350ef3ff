"""Every event type GroupX writes or streams, declared once (FEATURES §8, PROTOCOL §2).

A declaration says how long the event lives (``durable``: a row in the log, replayed; ``transient``:
live streams only), who it is for (``context``: it enters agents' Context Packets; ``audit``: kept
for the record, never shown to agents by ``read``; ``ui``: for the page and ``read``, never in a
packet), and the body keys every event of the type carries. ``rooms.events`` refuses a type that
is not declared here and a body that lacks a declared key, so a misspelt type fails where it is
written, not silently in the page. The context and audit lists, the forbidden namespaces and the
page's copy (``/api/bootstrap`` ``eventTypes``) all derive from this table.

Adding an event type: declare it here, then emit it with its constant from the module that owns it.

This module imports nothing from Django or the apps: any layer may read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Durability(StrEnum):
    DURABLE = "durable"
    TRANSIENT = "transient"


class Audience(StrEnum):
    CONTEXT = "context"  # enters the Context Packet (memory/transcript.py)
    AUDIT = "audit"  # stored for the record; never in a packet nor in a member's read
    UI = "ui"  # the page and member reads; never in a packet


# Namespaces the protocol reserves and forbids (PROTOCOL §15): no event of these ever exists.
FORBIDDEN_PREFIXES = ("approval.", "permission.", "user_input.")


class UndeclaredEventType(ValueError):
    """An event whose type (or body) does not match this table: a bug at the emitting site."""


@dataclass(frozen=True)
class EventType:
    name: str
    durability: Durability
    audience: Audience
    body: tuple[str, ...]  # keys every body of this type carries (it may carry more)
    about: str

    def as_json(self) -> dict[str, Any]:
        return {
            "type": self.name,
            "durability": self.durability.value,
            "audience": self.audience.value,
            "body": list(self.body),
        }


REGISTRY: dict[str, EventType] = {}


def _declare(name: str, durability: Durability, audience: Audience, body: tuple[str, ...], about: str) -> str:
    if name in REGISTRY or name.startswith(FORBIDDEN_PREFIXES):
        raise UndeclaredEventType(f"{name!r} is declared twice or lies in a forbidden namespace")
    REGISTRY[name] = EventType(name, durability, audience, body, about)
    return name


DURABLE, TRANSIENT = Durability.DURABLE, Durability.TRANSIENT
CONTEXT, AUDIT, UI = Audience.CONTEXT, Audience.AUDIT, Audience.UI
_TURN = ("turnId",)

# ---- messages: the room's conversation ----------------------------------------------------------
MESSAGE_CREATED = _declare(
    "message.created",
    DURABLE,
    CONTEXT,
    ("content",),
    "a public message from the user, an agent or the operator surface",
)
OPERATOR_DISPATCH = _declare(
    "operator.dispatch",
    DURABLE,
    CONTEXT,
    ("content", "operation", "promptLength", "targets"),
    "the room assistant gave agents work (worker_dispatch, worker_ask; FEATURES §13): room context, no chat bubble",
)

# ---- a Turn's life (turns/lifecycle.py) ---------------------------------------------------------
TURN_QUEUED = _declare(
    "turn.queued",
    DURABLE,
    UI,
    ("turnId", "sourceEventId", "targetActorId", "hopCount"),
    "a Turn was queued for an agent",
)
TURN_DISPATCHED = _declare("turn.dispatched", DURABLE, UI, ("turnId", "attemptId"), "an attempt claimed the Turn")
TURN_STARTED = _declare("turn.started", DURABLE, UI, ("turnId", "attemptId"), "the CLI's first native event")
TURN_COMPLETED = _declare("turn.completed", DURABLE, UI, _TURN, "the Turn ended with a reply")
TURN_FAILED = _declare("turn.failed", DURABLE, UI, _TURN, "the Turn ended with an error code")
TURN_CANCELLED = _declare("turn.cancelled", DURABLE, UI, _TURN, "the Turn was cancelled")
TURN_INTERRUPTED = _declare("turn.interrupted", DURABLE, UI, _TURN, "the Turn was cut short (restart, stop)")
TURN_REASONING_RECORDED = _declare(
    "turn.reasoning.recorded", DURABLE, AUDIT, _TURN, "the Turn's whole reasoning text, written with its terminal"
)
TOOL_PROGRESS_RECORDED = _declare(
    "tool.progress.recorded", DURABLE, AUDIT, _TURN, "the Turn's bounded tool records, written with its terminal"
)
TURN_CONTENT_DELTA = _declare(
    "turn.content.delta", TRANSIENT, UI, ("turnId", "chunkIndex", "text"), "a streamed piece of the reply"
)
TURN_REASONING_DELTA = _declare(
    "turn.reasoning.delta", TRANSIENT, UI, ("turnId", "chunkIndex", "text"), "a streamed piece of reasoning"
)
TOOL_PROGRESS = _declare(
    "tool.progress", TRANSIENT, UI, ("turnId", "nativeType", "details"), "a native tool call started or finished"
)
ROUTING_LOOP_STOPPED = _declare(
    "routing.loop_stopped",
    DURABLE,
    UI,
    ("errorCode", "commandType", "parentTurnId"),
    "an agent's send or ask was refused by the chain limits",
)

# ---- supervision pairing (turns/supervision.py, turns/watch.py; FEATURES §12) --------------------
SUPERVISION_PAIRED = _declare(
    "supervision.paired",
    DURABLE,
    UI,
    ("pairId", "mode", "sourceEventId", "watchEventId", "workers", "observers"),
    "a task's workers were paired with observers in one command",
)
SUPERVISION_OBSERVED = _declare(
    "supervision.observed",
    DURABLE,
    UI,
    ("pairId", "subjectTurnId", "status"),
    "an observer's watch returned a snapshot of its worker",
)
SUPERVISION_STEERED = _declare(
    "supervision.steered",
    DURABLE,
    UI,
    ("action", "reason", "subjectTurnId", "nextTurnId", "pairId"),
    "an observer nudged or interrupted its worker with public guidance",
)

# The terminal event of each final status, for the code that writes ``turn.<status>``.
TURN_TERMINALS = {
    "completed": TURN_COMPLETED,
    "failed": TURN_FAILED,
    "cancelled": TURN_CANCELLED,
    "interrupted": TURN_INTERRUPTED,
}

# ---- an agent's session (agents/sessions.py) ----------------------------------------------------
SESSION_STARTING = _declare("session.starting", DURABLE, UI, ("actorId",), "the CLI is being started")
SESSION_READY = _declare("session.ready", DURABLE, UI, ("actorId",), "a fresh native session is ready")
SESSION_RESUMED = _declare("session.resumed", DURABLE, UI, ("actorId",), "the previous native session was resumed")
SESSION_FAILED = _declare("session.failed", DURABLE, UI, ("actorId",), "the session could not be started")
SESSION_STOPPED = _declare("session.stopped", DURABLE, UI, ("actorId",), "the session was closed")
SESSION_RETRYING = _declare(
    "session.retrying", TRANSIENT, UI, ("actorId", "attempt", "nextDelayMs"), "a start failed and will be tried again"
)

# ---- memory and identity (memory/) --------------------------------------------------------------
MEMORY_REMEMBERED = _declare("memory.remembered", DURABLE, UI, ("record",), "a memory record was saved")
MEMORY_SUPERSEDED = _declare(
    "memory.superseded", DURABLE, UI, ("record", "supersededMemoryId"), "a memory record replaced an older one"
)
MEMORY_RETRACTED = _declare("memory.retracted", DURABLE, UI, ("record",), "a memory record was retracted")
IDENTITY_REMEMBERED = _declare("identity.remembered", DURABLE, UI, ("record",), "an identity record was saved")
IDENTITY_SUPERSEDED = _declare(
    "identity.superseded", DURABLE, UI, ("record", "supersededIdentityId"), "an identity record replaced an older one"
)
IDENTITY_RETRACTED = _declare("identity.retracted", DURABLE, UI, ("record",), "an identity record was retracted")
CONTEXT_RESET = _declare("context.reset", DURABLE, UI, ("throughSeq",), "room context starts again after a seq")
CONTEXT_COMPACTION_STARTED = _declare(
    "context.compaction.started", TRANSIENT, UI, ("operationId",), "a compaction or dated rollup began"
)
CONTEXT_COMPACTION_RETRYING = _declare(
    "context.compaction.retrying", TRANSIENT, UI, ("operationId",), "a summariser failed; the next one is tried"
)
CONTEXT_COMPACTION_COMPLETED = _declare(
    "context.compaction.completed", TRANSIENT, UI, ("operationId",), "a summary was written"
)
CONTEXT_COMPACTION_FAILED = _declare(
    "context.compaction.failed", TRANSIENT, UI, ("operationId",), "no summariser could write the summary"
)
COMPACTION_PROGRESS = {
    "started": CONTEXT_COMPACTION_STARTED,
    "retrying": CONTEXT_COMPACTION_RETRYING,
    "completed": CONTEXT_COMPACTION_COMPLETED,
    "failed": CONTEXT_COMPACTION_FAILED,
}

# ---- failures outside a Turn (rooms/system_errors.py; PROTOCOL §14: what affects the user is public) --
SYSTEM_ERROR = _declare(
    "system.error",
    DURABLE,
    UI,
    ("condition", "code", "message", "status"),
    "a failure outside any Turn began (status active) or healed (status resolved)",
)

# ---- lists derived from the table ---------------------------------------------------------------
# Declaration order is kept: memory/sql.py binds CONTEXT_TYPES, in this order, one placeholder each.
CONTEXT_TYPES = tuple(t.name for t in REGISTRY.values() if t.audience is CONTEXT)
AUDIT_TYPES = tuple(t.name for t in REGISTRY.values() if t.audience is AUDIT)


def check(name: str, durability: Durability, body: dict[str, Any]) -> EventType:
    """The declaration of an event about to be written; UndeclaredEventType when it does not fit."""
    declared = REGISTRY.get(name)
    if declared is None:
        forbidden = " (a forbidden namespace)" if name.startswith(FORBIDDEN_PREFIXES) else ""
        raise UndeclaredEventType(f"event type {name!r} is not declared in rooms/event_types.py{forbidden}")
    if declared.durability is not durability:
        raise UndeclaredEventType(f"{name!r} is declared {declared.durability.value}, not {durability.value}")
    missing = [key for key in declared.body if key not in body]
    if missing:
        raise UndeclaredEventType(f"a {name!r} body lacks {', '.join(missing)}")
    return declared


def for_the_page() -> dict[str, Any]:
    """What ``/api/bootstrap`` sends as ``eventTypes``, so the page holds no copy of the table."""
    return {"types": [t.as_json() for t in REGISTRY.values()], "forbiddenPrefixes": list(FORBIDDEN_PREFIXES)}

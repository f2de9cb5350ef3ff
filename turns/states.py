"""The Turn state machine (PROTOCOL §5). Every status change goes through ``can_move``."""

from __future__ import annotations

QUEUED, DISPATCHING, RUNNING, CANCELLING = "queued", "dispatching", "running", "cancelling"
COMPLETED, FAILED, CANCELLED, INTERRUPTED = "completed", "failed", "cancelled", "interrupted"

TURN_STATUSES = (QUEUED, DISPATCHING, RUNNING, CANCELLING, COMPLETED, FAILED, CANCELLED, INTERRUPTED)
TERMINAL_STATUSES = frozenset({COMPLETED, FAILED, CANCELLED, INTERRUPTED})
ACTIVE_STATUSES = frozenset({QUEUED, DISPATCHING, RUNNING, CANCELLING})
IN_FLIGHT_STATUSES = frozenset({DISPATCHING, RUNNING, CANCELLING})

TRANSITIONS: dict[str, frozenset[str]] = {
    QUEUED: frozenset({DISPATCHING, CANCELLED, FAILED}),
    # queued again only by restart recovery, for a prepared + not_delivered attempt
    DISPATCHING: frozenset({QUEUED, RUNNING, CANCELLING, COMPLETED, FAILED, CANCELLED, INTERRUPTED}),
    RUNNING: frozenset({CANCELLING, COMPLETED, FAILED, CANCELLED, INTERRUPTED}),
    CANCELLING: frozenset({COMPLETED, CANCELLED, FAILED, INTERRUPTED}),
}


def can_move(current: str, new: str) -> bool:
    return new in TRANSITIONS.get(current, frozenset())


def sources_for(new: str) -> list[str]:
    """The statuses a conditional UPDATE may move from to reach ``new``."""
    return [status for status, targets in TRANSITIONS.items() if new in targets]

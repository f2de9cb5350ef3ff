"""The Turn state machine (PROTOCOL §5; docs/DECISIONS.md D29).

``TRANSITIONS`` is the one table of legal status changes. Every change is checked against it:
the ORM's conditional UPDATEs go through ``turns.transitions.move_turn``, and the hot path's fixed
statements (turns/sql.py) take their from/to statuses from the ``Move`` constants below, each
checked against the table when this module is imported, or, for the terminal ``finish_turn``
whose statuses vary, from its caller after ``check_move``. An illegal change raises
``IllegalTransition`` before anything is written. This module is pure Python: no Django.
"""

from __future__ import annotations

from dataclasses import dataclass

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


class IllegalTransition(RuntimeError):
    """A status change the table forbids: a bug in the caller, never a client's mistake (500)."""

    def __init__(self, current: str, new: str) -> None:
        super().__init__(f"a Turn cannot move from {current} to {new}")
        self.current, self.new = current, new


def can_move(current: str, new: str) -> bool:
    return new in TRANSITIONS.get(current, frozenset())


def check_move(current: str, new: str) -> None:
    if not can_move(current, new):
        raise IllegalTransition(current, new)


def sources_for(new: str) -> list[str]:
    """The statuses a conditional UPDATE may move from to reach ``new``."""
    return [status for status, targets in TRANSITIONS.items() if new in targets]


@dataclass(frozen=True, slots=True)
class Move:
    """One legal change, fixed in advance for a statement that is not built per call."""

    current: str
    new: str

    def __post_init__(self) -> None:
        check_move(self.current, self.new)


# The fixed statements of the hot path (turns/sql.py): the claim's compare-and-set, and the
# first native event's dispatching → running (a Turn already cancelling stays cancelling).
CLAIM = Move(QUEUED, DISPATCHING)
START = Move(DISPATCHING, RUNNING)

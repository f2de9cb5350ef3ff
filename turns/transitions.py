"""The one function that changes a Turn's status through the ORM (docs/DECISIONS.md D29).

A compare-and-set: the row moves only if it still has the status the caller read, so a cancel
racing a claim or a terminal never produces two outcomes. The pair is checked against
``turns.states.TRANSITIONS`` first: an illegal change raises ``IllegalTransition`` and the caller's
transaction rolls back. The hot path's fixed statements use ``turns.states.CLAIM`` / ``START``.
"""

from __future__ import annotations

from typing import Any

from turns.models import Turn
from turns.states import check_move


def move_turn(turn_id: str, current: str, new: str, **columns: Any) -> bool:
    """Move ``turn_id`` from ``current`` to ``new``, writing ``columns`` in the same UPDATE. False
    when the Turn is no longer ``current`` (someone moved it first); raises when the table
    forbids the change."""
    check_move(current, new)
    return Turn.objects.filter(turn_id=turn_id, status=current).update(status=new, **columns) == 1

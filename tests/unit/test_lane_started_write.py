"""A lane queues ``mark_started`` without holding the Turn's events, and waits for it before the
terminal (agents/lanes.py, docs/DECISIONS.md D74). A store fault it meets still ends the Turn as
the lane's own fault: ``_consume`` raises it (the lane then fails the Turn with STORE_UNAVAILABLE
and rebuilds the session, ``Lane._end_after_store_fault``), at the Turn's next event or its end."""

from __future__ import annotations

import asyncio
import contextlib
from types import SimpleNamespace

import pytest
from asgiref.sync import async_to_sync

from agents import lanes
from agents.drivers.base import ContentDelta, NativeTurn, TurnCompleted, TurnStarted
from groupx_site.core.store_faults import StoreUnavailable
from tests.unit.room import actor, claim, queued_turn
from turns import lifecycle


class ScriptedTurn(NativeTurn):
    """The driver's events of one turn; before each content delta it may wait for the lane's
    ``mark_started`` to have come back (``after_start``), as a CLI slower than the writer would."""

    def __init__(self, events, active: lanes.ActiveTurn | None = None):
        self.script, self.active, self.abandoned = list(events), active, False

    async def events(self):
        for event in self.script:
            if isinstance(event, ContentDelta) and self.active is not None and self.active.started_write is not None:
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.active.started_write)
            yield event

    async def cancel(self) -> None:
        return None

    def abandon(self) -> None:
        self.abandoned = True


def a_lane() -> lanes.Lane:
    sessions = SimpleNamespace(actor=actor("agent:alpha"), agent=SimpleNamespace(actor_id="agent:alpha"),
                               session=SimpleNamespace(needs_rebuild=False))
    return lanes.Lane(sessions)


def a_running_turn(events, *, wait_for_start: bool) -> tuple[lanes.Lane, lanes.ActiveTurn]:
    turn_id = queued_turn()
    claimed = claim(turn_id)
    assert lifecycle.mark_prompt_invoked(claimed)
    active = lanes.ActiveTurn(claim=claimed, turn_id=turn_id)
    active.native = ScriptedTurn(events, active if wait_for_start else None)
    return a_lane(), active


def store_fault(*args, **kwargs):
    raise StoreUnavailable("disk_full")


@pytest.fixture
def failing_start(monkeypatch):
    monkeypatch.setattr(lifecycle, "mark_started", store_fault)


def test_a_store_fault_of_mark_started_fails_the_turn_even_when_the_whole_answer_was_already_in(failing_start):
    lane, active = a_running_turn([TurnStarted(), ContentDelta("all "), TurnCompleted("all said")],
                                  wait_for_start=False)

    with pytest.raises(StoreUnavailable):
        async_to_sync(lane._consume)(active)
    assert active.started_write is None  # waited for and raised, not left behind


def test_a_store_fault_of_mark_started_stops_the_turn_at_its_next_event(failing_start):
    lane, active = a_running_turn([TurnStarted(), ContentDelta("never published"), TurnCompleted()],
                                  wait_for_start=True)

    with pytest.raises(StoreUnavailable):
        async_to_sync(lane._consume)(active)
    assert active.chunk_index == 0
    assert active.native.abandoned


def test_without_a_fault_the_turn_completes_with_its_start_written_first():
    lane, active = a_running_turn([TurnStarted(), ContentDelta("hello"), TurnCompleted()], wait_for_start=False)

    outcome = async_to_sync(lane._consume)(active)

    assert outcome.status == "completed" and outcome.content == "hello"
    assert active.started_write is None
    assert lifecycle.current_status(active.turn_id) == "running"

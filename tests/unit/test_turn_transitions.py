"""Every Turn status change goes through the transition table (turns/states.py, D29)."""

from __future__ import annotations

import itertools

import pytest

from rooms.models import Event
from tests.unit.room import actor, claim, queued_turn, status
from turns import lifecycle
from turns import sql as turn_sql
from turns.models import Turn
from turns.states import (
    CANCELLING,
    CLAIM,
    DISPATCHING,
    QUEUED,
    RUNNING,
    START,
    TERMINAL_STATUSES,
    TRANSITIONS,
    TURN_STATUSES,
    IllegalTransition,
    Move,
    can_move,
)
from turns.transitions import move_turn

LEGAL = sorted((current, new) for current, targets in TRANSITIONS.items() for new in targets)
ILLEGAL = sorted(pair for pair in itertools.product(TURN_STATUSES, repeat=2) if pair not in set(LEGAL))


def turn_in(current: str) -> str:
    """A real queued Turn, then set to ``current`` directly: the seed of a transition test."""
    turn_id = queued_turn()
    Turn.objects.filter(turn_id=turn_id).update(status=current)
    return turn_id


@pytest.mark.parametrize(("current", "new"), LEGAL)
def test_a_legal_change_moves_the_turn(current, new):
    turn_id = turn_in(current)
    assert move_turn(turn_id, current, new) is True
    assert status(turn_id) == new


@pytest.mark.parametrize(("current", "new"), ILLEGAL)
def test_an_illegal_change_raises_and_leaves_the_turn_as_it_was(current, new):
    turn_id = turn_in(current)
    with pytest.raises(IllegalTransition):
        move_turn(turn_id, current, new)
    assert status(turn_id) == current


def test_a_terminal_turn_never_moves_again():
    assert all(not can_move(terminal, new) for terminal in TERMINAL_STATUSES for new in TURN_STATUSES)


def test_a_change_from_a_status_the_turn_no_longer_has_writes_nothing():
    turn_id = turn_in(RUNNING)
    assert move_turn(turn_id, DISPATCHING, CANCELLING) is False
    assert status(turn_id) == RUNNING


def test_the_fixed_statements_make_legal_moves_only():
    assert (CLAIM.current, CLAIM.new) == (QUEUED, DISPATCHING)
    assert (START.current, START.new) == (DISPATCHING, RUNNING)
    with pytest.raises(IllegalTransition):
        Move(RUNNING, QUEUED)


@pytest.mark.parametrize("current", [s for s in TURN_STATUSES if s != QUEUED])
def test_the_claim_statement_moves_only_a_queued_turn(current):
    turn_id = turn_in(current)
    assert turn_sql.claim_turn(turn_id, "binding_x") is None
    assert status(turn_id) == current


def test_the_first_native_event_moves_dispatching_to_running_but_leaves_cancelling_alone():
    first, second = queued_turn(), queued_turn("agent:beta")
    first_claim, second_claim = claim(first), claim(second)
    lifecycle.request_cancel(second)
    lifecycle.mark_started(first_claim, actor("agent:alpha"), "native-a")
    lifecycle.mark_started(second_claim, actor("agent:beta"), "native-b")
    assert (status(first), status(second)) == (RUNNING, CANCELLING)


def test_finishing_a_turn_with_a_status_the_table_forbids_raises_and_writes_nothing():
    turn_id = queued_turn()
    events_before = Event.objects.count()
    outcome = lifecycle.TurnOutcome(status="interrupted", content="", error_code="TURN_INTERRUPTED")
    with pytest.raises(IllegalTransition):
        lifecycle.finish(None, turn_id, outcome, lifecycle.events.SYSTEM)
    assert status(turn_id) == QUEUED
    assert Event.objects.count() == events_before  # the terminal event it wrote first rolled back

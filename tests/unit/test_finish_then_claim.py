"""A lane's finish that claims its next Turn in the same writer call (docs/DECISIONS.md D81).

The finish is written first; the claim after it is the one ``claim_head`` makes alone, so a cancel
committed before the call wins, a newer native-reset mark claims nothing, and a claim that fails
after the finish leaves the finish written and its Turn where ``requeue_if_never_sent`` puts it
back in the queue (what ``Lane._finish_then_claim`` does then)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from django.db import OperationalError

from agents import dispatch
from agents.lanes import ActiveTurn, Lane
from groupx_site.core.ids import WEB_BINDING_ID
from memory import native_reset
from memory.engine import reset_context
from setup_wizard import roster
from tests.unit.room import actor, bind, command_id, queued_turn, running, status
from turns import lifecycle
from turns.actions import cancel_turn
from turns.lifecycle import TurnOutcome
from turns.models import TurnAttempt

ALPHA = "agent:alpha"


def finish_then_claim(first, claiming: ActiveTurn, binding_id: str, *, session_reset_mark: int = 0):
    return dispatch.finish_then_claim(
        first,
        first.turn_id,
        TurnOutcome(status="completed", content="done"),
        actor(ALPHA),
        roster.live_agent(ALPHA),
        claiming,
        session_reset_mark=session_reset_mark,
        binding_id=binding_id,
        instance_id=f"inst_{binding_id}",
    )


def two_turns_the_first_running() -> tuple:
    binding_id = bind(ALPHA)
    first = running(queued_turn(ALPHA, "first"), binding_id)
    return first, queued_turn(ALPHA, "second"), binding_id


def test_the_finish_writes_the_outcome_and_claims_the_next_turn_with_its_write_ahead():
    first, second, binding_id = two_turns_the_first_running()
    claiming = ActiveTurn(claim=None, turn_id="")
    head = finish_then_claim(first, claiming, binding_id)
    assert status(first.turn_id) == "completed"
    assert claiming.turn_id == second  # named before the claim: a cancel from then on finds it
    assert head.turn.turn_id == second and head.ready.claim.turn_id == second and head.ready.invoked
    assert status(second) == "dispatching"
    attempt = TurnAttempt.objects.get(turn_id=second)
    assert (attempt.dispatch_phase, attempt.delivery_certainty, attempt.binding_id) == (
        "prompt_invoked",
        "unknown",
        binding_id,
    )


def test_a_cancel_committed_before_the_finish_leaves_the_next_turn_cancelled_and_claims_nothing():
    first, second, binding_id = two_turns_the_first_running()
    assert cancel_turn(second, {"clientCommandId": "cancel-next"})["status"] == "cancelled"
    head = finish_then_claim(first, ActiveTurn(claim=None, turn_id=""), binding_id)
    assert status(first.turn_id) == "completed"
    assert head.turn is None and head.ready is None
    assert status(second) == "cancelled"


def test_a_native_reset_newer_than_the_session_claims_nothing_so_the_lane_renews_it_first():
    first, second, binding_id = two_turns_the_first_running()
    reset_context(WEB_BINDING_ID, "web", {"clientCommandId": command_id(), "resetNativeSessions": True})
    assert native_reset.mark() > 0  # newer than the session's (0: born before any reset)
    head = finish_then_claim(first, ActiveTurn(claim=None, turn_id=""), binding_id)
    assert status(first.turn_id) == "completed"
    assert head.turn.turn_id == second and head.ready is None
    assert status(second) == "queued"


def test_a_claim_failing_after_the_finish_keeps_the_finish_and_its_turn_goes_back_to_the_queue(monkeypatch):
    first, second, binding_id = two_turns_the_first_running()

    def write_ahead_on_a_full_disk(claim):
        raise OperationalError("database or disk is full")

    monkeypatch.setattr(lifecycle, "mark_prompt_invoked", write_ahead_on_a_full_disk)
    claiming = ActiveTurn(claim=None, turn_id="")
    with pytest.raises(OperationalError):
        finish_then_claim(first, claiming, binding_id)
    assert status(first.turn_id) == "completed"
    assert claiming.turn_id == second and status(second) == "dispatching"  # claimed, no write-ahead
    monkeypatch.undo()
    assert lifecycle.requeue_if_never_sent(claiming.turn_id)
    assert status(second) == "queued"
    # And the lane's fallback, finishing the first Turn again, writes nothing twice.
    assert lifecycle.finish(first, first.turn_id, TurnOutcome(status="completed"), actor(ALPHA)) is None


def test_a_cancel_of_the_turn_the_finish_is_claiming_reaches_the_lane():
    lane = Lane(SimpleNamespace(agent=SimpleNamespace(actor_id=ALPHA)))
    lane.active = ActiveTurn(claim=None, turn_id="turn_finishing")
    lane._claiming = ActiveTurn(claim=None, turn_id="turn_next")

    async def cancel() -> bool:
        return lane.request_cancel("turn_next")

    assert asyncio.run(cancel()) is True
    assert lane._claiming.cancel_requested and not lane.active.cancel_requested

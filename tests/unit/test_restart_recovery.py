"""Restart recovery (turns/lifecycle.py:recover_after_restart, PROTOCOL §5): only a prompt that was
certainly never sent goes back to the queue; nothing is ever sent twice."""

from __future__ import annotations

from asgiref.sync import async_to_sync

from agents import agent_runtime
from groupx_site.store import db
from tests.unit.room import claim, event_types, queued_turn, running, status
from turns import lifecycle
from turns.models import Turn, TurnAttempt


def recover() -> dict[str, int]:
    # What the runtime runs on start, through the writer executor (inline in this tier).
    return async_to_sync(db.write(agent_runtime._recover_turns))()


def test_a_queued_turn_stays_queued_and_nothing_is_written():
    turn_id = queued_turn()
    before = event_types()
    assert recover() == {"requeued": 0, "cancelled": 0, "interrupted": 0, "failed": 0}
    assert status(turn_id) == "queued"
    assert event_types() == before


def test_a_turn_claimed_before_its_write_ahead_goes_back_to_the_queue():
    turn_id = queued_turn()
    claimed = claim(turn_id)
    assert recover()["requeued"] == 1
    turn = Turn.objects.get(turn_id=turn_id)
    assert (turn.status, turn.binding_id) == ("queued", None)
    assert TurnAttempt.objects.get(attempt_id=claimed.attempt_id).dispatch_phase == "terminal"
    assert event_types(body__turnId=turn_id) == ["turn.queued", "turn.dispatched"]  # no terminal: it runs later


def test_a_turn_whose_prompt_may_have_been_written_is_interrupted_not_resent():
    turn_id = queued_turn()
    claimed = claim(turn_id)
    assert lifecycle.mark_prompt_invoked(claimed)  # the write-ahead: delivery is now unknown
    assert recover()["interrupted"] == 1
    turn = Turn.objects.get(turn_id=turn_id)
    assert (turn.status, turn.error_code) == ("interrupted", "TURN_INTERRUPTED")
    assert lifecycle.next_queued_turn("agent:alpha") is None


def test_a_running_turn_is_interrupted_with_its_partial_text_kept():
    turn_id = queued_turn()
    running(turn_id)
    lifecycle.checkpoint_partial_text(turn_id, "half an answer")
    assert recover()["interrupted"] == 1
    turn = Turn.objects.get(turn_id=turn_id)
    assert (turn.status, turn.partial_text) == ("interrupted", "half an answer")
    assert event_types(event_type="turn.interrupted", body__turnId=turn_id) == ["turn.interrupted"]


def test_a_cancelling_turn_that_never_reached_the_cli_is_cancelled():
    turn_id = queued_turn()
    claim(turn_id)
    assert lifecycle.request_cancel(turn_id) == (True, "cancelling")
    assert recover()["cancelled"] == 1
    assert status(turn_id) == "cancelled"


def test_a_cancelling_turn_whose_prompt_was_sent_is_interrupted():
    turn_id = queued_turn()
    running(turn_id)
    lifecycle.request_cancel(turn_id)
    assert recover()["interrupted"] == 1
    assert status(turn_id) == "interrupted"


def test_a_running_turn_without_an_open_attempt_is_interrupted_never_requeued():
    # Not produced by the lifecycle (a Turn runs only after its attempt saw a native event), but a
    # damaged row must not go back to the queue: running → queued is not in the table.
    turn_id = queued_turn()
    running(turn_id)
    TurnAttempt.objects.filter(turn_id=turn_id).update(dispatch_phase="terminal")
    assert recover() == {"requeued": 0, "cancelled": 0, "interrupted": 1, "failed": 0}
    assert status(turn_id) == "interrupted"


def test_recovery_twice_changes_nothing_the_second_time():
    for make in (claim, running):
        make(queued_turn())
    assert recover() == {"requeued": 1, "cancelled": 0, "interrupted": 1, "failed": 0}
    before = event_types()
    assert recover() == {"requeued": 0, "cancelled": 0, "interrupted": 0, "failed": 0}
    assert event_types() == before


def test_a_turn_queued_for_an_agent_the_config_no_longer_runs_fails_with_unknown_target():
    kept, orphan = queued_turn("agent:alpha"), queued_turn("agent:beta")
    assert lifecycle.fail_queued_for_absent_agents({"agent:alpha"}) == 1
    assert status(kept) == "queued"
    turn = Turn.objects.get(turn_id=orphan)
    assert (turn.status, turn.error_code) == ("failed", "UNKNOWN_TARGET")
    assert event_types(body__turnId=orphan) == ["turn.queued", "turn.failed"]


def test_a_never_sent_turn_snapshotted_under_another_transport_fails_with_transport_mode_mismatch():
    # A historical row: claimed but never prompted, under a transport GroupX no longer selects.
    turn_id = queued_turn()
    claimed = claim(turn_id)
    Turn.objects.filter(turn_id=turn_id).update(transport="terminal")
    assert recover() == {"requeued": 0, "cancelled": 0, "interrupted": 0, "failed": 1}
    turn = Turn.objects.get(turn_id=turn_id)
    assert (turn.status, turn.error_code) == ("failed", "TRANSPORT_MODE_MISMATCH")
    assert TurnAttempt.objects.get(attempt_id=claimed.attempt_id).dispatch_phase == "terminal"
    assert event_types(event_type="turn.failed", body__turnId=turn_id) == ["turn.failed"]
    assert lifecycle.next_queued_turn("agent:alpha") is None  # never sent over another transport


def test_a_queued_turn_of_the_selected_transport_is_requeued_not_failed():
    turn_id = queued_turn()
    claim(turn_id)
    assert Turn.objects.get(turn_id=turn_id).transport == lifecycle.SELECTED_TRANSPORT
    assert recover()["failed"] == 0 and status(turn_id) == "queued"

"""Competing writes between a command's check and its commit (docs/DECISIONS.md D29).

These tests commit (``transaction=True``), so a second thread's connection sees what the first
committed and meets its write lock, as a second process would. The interleaving is forced by
running the competitor at a fixed point of the first command, never by timing."""

from __future__ import annotations

import threading

import pytest
from asgiref.sync import async_to_sync
from django.db import connection

from groupx_site.core.errors import GroupXError
from groupx_site.store import db, store_faults
from rooms.models import ClientCommand, Event
from tests.unit.room import actor, claim, event_types, queued_turn, status
from turns import lifecycle, messages
from turns import sql as turn_sql
from turns.actions import cancel_turn
from turns.lifecycle import TurnOutcome
from turns.transitions import move_turn

pytestmark = pytest.mark.django_db(transaction=True)


def on_another_connection(fn, *args, wait_for_lock: bool = True):
    """``fn(*args)`` through the writer executor on a thread of its own (so its own connection);
    its result or the exception it raised. ``wait_for_lock=False``: a busy lock fails at once
    instead of after the busy timeout."""
    outcome: dict = {}

    def work() -> None:
        try:
            if not wait_for_lock:
                connection.ensure_connection()
                connection.connection.execute("PRAGMA busy_timeout = 0")
            outcome["result"] = async_to_sync(db.write(fn))(*args)
        except Exception as error:  # handed back to the test
            outcome["error"] = error
        finally:
            connection.close()

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    return outcome.get("result"), outcome.get("error")


def test_a_twin_command_arriving_while_the_first_holds_the_lock_cannot_write_and_its_retry_replays(monkeypatch):
    body = {"clientCommandId": "twin", "to": ["agent:alpha"], "content": "once"}
    real_do = messages.do_post_message
    twin: dict = {}

    def do_with_a_twin(*args, **kwargs):
        # The first command has found no receipt and holds the write lock: its twin arrives now.
        twin["first try"] = on_another_connection(messages.post_message, dict(body), wait_for_lock=False)
        return real_do(*args, **kwargs)

    monkeypatch.setattr(messages, "do_post_message", do_with_a_twin)
    first = messages.post_message(body)
    _, error = twin["first try"]
    assert isinstance(error, GroupXError) and error.code == "STORE_UNAVAILABLE"  # 503: retry later
    store_faults.clear()

    retried, error = on_another_connection(messages.post_message, dict(body))
    assert error is None and retried == first
    assert event_types(event_type="message.created") == ["message.created"]
    assert ClientCommand.objects.count() == 1


def test_a_cancel_committed_between_the_lanes_head_read_and_its_claim_wins():
    turn_id = queued_turn()
    head = lifecycle.next_queued_turn("agent:alpha")
    assert head.turn_id == turn_id
    cancelled, error = on_another_connection(cancel_turn, turn_id, {"clientCommandId": "cancel-1"})
    assert error is None and cancelled["status"] == "cancelled"
    assert claim(turn_id) is None  # the claim's compare-and-set finds the Turn no longer queued
    assert status(turn_id) == "cancelled"
    assert "turn.dispatched" not in event_types(body__turnId=turn_id)


def test_a_cancel_committed_between_the_claim_and_the_write_ahead_stops_the_prompt():
    turn_id = queued_turn()
    claimed = claim(turn_id)
    cancelled, error = on_another_connection(cancel_turn, turn_id, {"clientCommandId": "cancel-2"})
    assert error is None and cancelled["status"] == "cancelling"
    assert lifecycle.mark_prompt_invoked(claimed) is False  # the prompt must never be written
    assert lifecycle.finish(claimed, turn_id, TurnOutcome(status="cancelled"), actor("agent:alpha")) == "cancelled"
    assert status(turn_id) == "cancelled"


def test_a_status_change_between_finishs_read_and_its_compare_and_set_rolls_finish_back(monkeypatch):
    turn_id = queued_turn()
    claimed = claim(turn_id)
    lifecycle.mark_prompt_invoked(claimed)
    lifecycle.mark_started(claimed, actor("agent:alpha"), "native-1")
    real_finish = turn_sql.finish_turn

    def finish_after_a_competitor(turn, current, new, **columns):
        # Another writer moves the Turn after finish read it: finish's compare-and-set must miss.
        move_turn(turn, current, "cancelling")
        return real_finish(turn, current, new, **columns)

    monkeypatch.setattr(turn_sql, "finish_turn", finish_after_a_competitor)
    outcome = TurnOutcome(status="completed", content="the answer")
    assert lifecycle.finish(claimed, turn_id, outcome, actor("agent:alpha")) is None
    # Everything finish wrote before the compare-and-set rolled back with it (the competitor too,
    # being in the same transaction here): no reply, no terminal event, still running.
    assert status(turn_id) == "running"
    assert not Event.objects.filter(event_type="message.created", actor_id="agent:alpha").exists()
    assert "turn.completed" not in event_types(body__turnId=turn_id)

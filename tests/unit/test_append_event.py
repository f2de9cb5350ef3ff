"""``append_event`` for a caller that reads nothing back builds no ``Event`` (docs/DECISIONS.md
D72): the row, its frame and its wake-up on commit are the same; the claim and ``turn.started``
are such callers."""

from __future__ import annotations

import pytest
from django.db import transaction

from rooms import bus, event_types, events
from rooms.models import Event
from tests.unit.room import claim, post, queued_turn, running

pytestmark = pytest.mark.django_db

_RANDOM = ("seq", "event_id", "occurred_at")


def _appended(monkeypatch, *, returns_event: bool):
    committed = []
    monkeypatch.setattr(bus, "committed", lambda seq, frame: committed.append(seq))
    with transaction.atomic():
        returned = events.turn_event(
            event_type=event_types.TURN_DISPATCHED,
            actor=events.SYSTEM,
            turn_id="turn_same",
            target_actor_id="agent:alpha",
            correlation_id="corr_same",
            root_correlation_id="corr_same",
            body={"attemptId": "att_same", "targetActorId": "agent:alpha"},
            returns_event=returns_event,
        )
    stored = Event.objects.order_by("-seq").values().first()
    return returned, stored, committed


def test_an_event_appended_without_its_object_is_the_same_row_and_wakes_the_streams_on_commit(
    monkeypatch, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        built, built_row, built_woke = _appended(monkeypatch, returns_event=True)
    with django_capture_on_commit_callbacks(execute=True):
        none, row, woke = _appended(monkeypatch, returns_event=False)
    assert isinstance(built, Event) and built.seq == built_row["seq"]
    assert none is None
    assert woke == [row["seq"]] and built_woke == [built_row["seq"]]
    assert {k: v for k, v in row.items() if k not in _RANDOM} == {
        k: v for k, v in built_row.items() if k not in _RANDOM
    }


def test_the_claim_and_turn_started_build_no_event_object(monkeypatch):
    turn_id = queued_turn()
    built = []
    real = Event.from_db.__func__
    monkeypatch.setattr(Event, "from_db", classmethod(lambda cls, *a: built.append(1) or real(cls, *a)))
    running(turn_id)
    assert built == []
    assert post(content="a message still gets its Event")["messageEventId"] and built


def test_a_claimed_turn_still_logs_turn_dispatched_once():
    turn_id = queued_turn()
    claimed = claim(turn_id)
    dispatched = Event.objects.filter(event_type=event_types.TURN_DISPATCHED, body__turnId=turn_id)
    assert [event.body["attemptId"] for event in dispatched] == [claimed.attempt_id]

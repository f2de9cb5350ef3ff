"""``system.error`` (rooms/system_errors.py, docs/DECISIONS.md D89): one event when a condition
begins, none while it lasts, one when it heals; the log says which conditions are active."""

from __future__ import annotations

import pytest

from rooms import system_errors
from rooms.models import Event


def bodies(condition: str) -> list[dict]:
    return [
        e.body
        for e in Event.objects.filter(event_type="system.error", correlation_id=f"system:{condition}").order_by("seq")
    ]


def test_a_condition_reported_again_while_active_writes_one_event():
    assert (
        system_errors.report(
            "session:agent:alpha", "ADAPTER_START_FAILED", "alpha could not start", actor_id="agent:alpha"
        )
        is True
    )
    assert (
        system_errors.report(
            "session:agent:alpha", "ADAPTER_START_FAILED", "alpha could not start again", actor_id="agent:alpha"
        )
        is False
    )

    assert bodies("session:agent:alpha") == [
        {
            "condition": "session:agent:alpha",
            "code": "ADAPTER_START_FAILED",
            "message": "alpha could not start",
            "status": "active",
            "actorId": "agent:alpha",
        }
    ]
    event = Event.objects.get(event_type="system.error")
    assert event.actor_id == "system:groupx" and event.provenance == {
        "sourceKind": "system",
        "subjectActorId": "agent:alpha",
    }


def test_a_resolve_writes_only_for_an_active_condition_and_keeps_its_code_and_agent():
    assert system_errors.resolve("room.summary", "written again") is False
    system_errors.report("memory.dated:agent:beta", "TURN_IDLE_TIMEOUT", "beta's day failed", actor_id="agent:beta")

    assert system_errors.resolve("memory.dated:agent:beta", "written again") is True
    assert system_errors.resolve("memory.dated:agent:beta", "written again") is False
    assert [(b["status"], b["code"], b.get("actorId")) for b in bodies("memory.dated:agent:beta")] == [
        ("active", "TURN_IDLE_TIMEOUT", "agent:beta"),
        ("resolved", "TURN_IDLE_TIMEOUT", "agent:beta"),
    ]


def test_a_condition_that_comes_back_after_healing_is_reported_again():
    system_errors.report("worker.none", "SESSION_NOT_AVAILABLE", "no worker")
    system_errors.resolve("worker.none", "a worker runs it")

    assert system_errors.report("worker.none", "SESSION_NOT_AVAILABLE", "no worker") is True
    assert [b["status"] for b in bodies("worker.none")] == ["active", "resolved", "active"]
    assert system_errors.is_active("worker.none")


def test_the_active_conditions_are_read_from_the_log_by_prefix_and_by_agent():
    system_errors.report("lease.lost:embedded:a", "SESSION_NOT_AVAILABLE", "a lost it")
    system_errors.report("lease.lost:embedded:b", "SESSION_NOT_AVAILABLE", "b lost it")
    system_errors.resolve("lease.lost:embedded:a", "healed")
    system_errors.report(
        "session:agent:gamma", "ADAPTER_NOT_FOUND", "gamma's command is missing", actor_id="agent:gamma"
    )

    assert system_errors.active_conditions("lease.lost:") == ["lease.lost:embedded:b"]
    assert system_errors.active_by_agent() == {
        "agent:gamma": {"session:agent:gamma": {"code": "ADAPTER_NOT_FOUND", "message": "gamma's command is missing"}}
    }


def test_a_code_the_error_table_does_not_declare_is_refused_and_writes_nothing():
    with pytest.raises(ValueError, match="not a GroupX error code"):
        system_errors.report("store.integrity", "DISK_ON_FIRE", "no such code")
    assert bodies("store.integrity") == []

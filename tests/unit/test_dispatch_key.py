"""The dispatch key ``UNIQUE(source_event_id, target_actor_id)`` (FEATURES §18) answered as the
protocol's 409 ``DUPLICATE_DISPATCH`` by the operator's ``dispatch_event`` (docs/DECISIONS.md D97):
by the check before any write, and by the key itself when another process's re-route committed
between that check and the insert."""

from __future__ import annotations

import pytest

from assistant import operator_room
from groupx_site.core.errors import GroupXError
from rooms.models import ClientCommand, Event
from tests.unit.room import command_id, post
from turns.models import Turn


def reroute(message_id: str, *to: str) -> dict:
    return operator_room.dispatch_event(
        operator_room.check_dispatch_event(
            {"sourceEventId": message_id, "to": list(to), "clientCommandId": command_id()}
        )
    )


def refused(message_id: str, *to: str) -> GroupXError:
    before = (Event.objects.count(), Turn.objects.count(), ClientCommand.objects.count())
    with pytest.raises(GroupXError) as error:
        reroute(message_id, *to)
    assert (Event.objects.count(), Turn.objects.count(), ClientCommand.objects.count()) == before
    return error.value


def test_a_reroute_to_an_agent_the_message_already_woke_is_a_duplicate_dispatch():
    message = post(["agent:alpha"], "who takes this?")["messageEventId"]
    assert [t["target"] for t in reroute(message, "agent:beta")["turns"]] == ["agent:beta"]

    error = refused(message, "agent:gamma", "agent:beta")

    assert (error.code, error.status, error.details["targets"]) == ("DUPLICATE_DISPATCH", 409, ["agent:beta"])


def test_when_the_check_is_passed_by_a_concurrent_reroute_the_key_itself_answers_duplicate_dispatch(monkeypatch):
    message = post(["agent:alpha"], "who takes this?")["messageEventId"]
    # Another process's re-route committed after this command's check: the check saw nothing.
    monkeypatch.setattr(operator_room, "check_not_woken_yet", lambda source, agents: None)

    error = refused(message, "agent:alpha")

    assert (error.code, error.status) == ("DUPLICATE_DISPATCH", 409)

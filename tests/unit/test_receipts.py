"""Commands run once (rooms/commands.py, PROTOCOL §8.1): a receipt per (binding, clientCommandId)."""

from __future__ import annotations

import pytest

from groupx_site.core.errors import GroupXError
from groupx_site.core.ids import WEB_BINDING_ID
from memory.actions import remember_memory
from memory.inputs import check_memory_write
from memory.models import MemoryRecord
from memory.records import WEB_WRITER
from rooms import commands
from rooms.models import ClientCommand, Event
from tests.unit.room import claim, queued_turn
from turns.actions import cancel_turn
from turns.member_actions import member_send
from turns.messages import post_message
from turns.models import Turn


def written() -> tuple[int, int, int]:
    return Event.objects.count(), Turn.objects.count(), ClientCommand.objects.count()


def test_the_same_command_twice_returns_the_stored_result_and_writes_once():
    body = {"clientCommandId": "c-1", "to": ["agent:alpha", "agent:beta"], "content": "hi"}
    first = post_message(body)
    after_first = written()
    assert post_message(dict(body)) == first
    assert written() == after_first == (3, 2, 1)  # message + 2 × turn.queued; 2 Turns; 1 receipt


def test_the_same_id_with_another_payload_is_a_conflict_that_writes_nothing():
    post_message({"clientCommandId": "c-2", "to": ["agent:alpha"], "content": "hi"})
    before = written()
    with pytest.raises(GroupXError) as refused:
        post_message({"clientCommandId": "c-2", "to": ["agent:alpha"], "content": "something else"})
    assert refused.value.code == "CLIENT_COMMAND_CONFLICT"
    assert written() == before


def test_the_same_id_for_another_kind_of_command_is_a_conflict():
    turn_id = queued_turn()
    post_message({"clientCommandId": "c-3", "to": ["agent:beta"], "content": "hi"})
    with pytest.raises(GroupXError) as refused:
        cancel_turn(turn_id, {"clientCommandId": "c-3"})
    assert refused.value.code == "CLIENT_COMMAND_CONFLICT"
    assert Turn.objects.get(turn_id=turn_id).status == "queued"


def test_a_refused_command_writes_nothing_and_its_id_stays_free():
    before = written()
    with pytest.raises(GroupXError) as refused:
        post_message({"clientCommandId": "c-4", "to": ["agent:nobody"], "content": "hi"})
    assert refused.value.code == "UNKNOWN_TARGET"
    assert written() == before
    accepted = post_message({"clientCommandId": "c-4", "to": ["agent:alpha"], "content": "hi"})
    assert accepted["turns"][0]["target"] == "agent:alpha"


def test_a_full_queue_refuses_the_whole_command():
    for _ in range(3):
        queued_turn("agent:beta")
    before = written()
    with pytest.raises(GroupXError) as refused:
        post_message({"clientCommandId": "c-5", "to": ["agent:alpha", "agent:beta"], "content": "hi"})
    assert refused.value.code == "QUEUE_CAPACITY_REACHED"
    assert refused.value.details["targets"] == ["agent:beta"]
    assert written() == before  # not even alpha's Turn


def test_a_run_that_raises_leaves_no_receipt_so_the_command_can_run_again():
    calls = []

    def run():
        calls.append(1)
        if len(calls) == 1:
            raise GroupXError("INVALID_ENVELOPE", "not yet")
        return {"ran": len(calls)}

    once = {"binding_id": WEB_BINDING_ID, "client_command_id": "c-6", "command_type": "unit.test", "canonical": {}}
    with pytest.raises(GroupXError):
        commands.run_once(**once, run=run)
    assert commands.run_once(**once, run=run) == {"ran": 2}
    assert commands.run_once(**once, run=run) == {"ran": 2}
    assert len(calls) == 2
    assert commands.stored_result(
        binding_id=WEB_BINDING_ID, client_command_id="c-6", command_type="unit.test", canonical={}
    ) == {"ran": 2}


def test_receipts_are_per_binding():
    turn_id = queued_turn()
    claimed = claim(turn_id)
    binding = Turn.objects.get(turn_id=turn_id).binding_id
    body = {"clientCommandId": "shared", "to": ["agent:beta"], "content": "from alpha"}
    post_message({**body, "content": "from the web"})
    sent = member_send(binding, body)  # the same id under another binding is another command
    assert sent["correlationId"] == claimed.root_correlation_id
    assert member_send(binding, dict(body)) == sent
    assert Turn.objects.filter(parent_turn_id=turn_id).count() == 1


def test_a_cancel_retried_returns_its_first_answer():
    turn_id = queued_turn()
    first = cancel_turn(turn_id, {"clientCommandId": "c-7"})
    assert first == {"turnId": turn_id, "accepted": True, "status": "cancelled", "transport": "structured"}
    assert cancel_turn(turn_id, {"clientCommandId": "c-7"}) == first
    assert cancel_turn(turn_id, {"clientCommandId": "c-8"})["accepted"] is False


def test_a_memory_command_retried_writes_one_record():
    body = {
        "clientCommandId": "c-9",
        "scope": {"type": "room", "id": "room:main"},
        "kind": "fact",
        "content": "the build runs on 2 cores",
    }
    first = remember_memory(WEB_WRITER, check_memory_write(body))
    assert remember_memory(WEB_WRITER, check_memory_write(dict(body))) == first
    assert MemoryRecord.objects.count() == 1

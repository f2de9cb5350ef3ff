"""Chain limits of agent-created Turns (turns/limits.py, PROTOCOL §6.6, §7). This tier's room sets
hopCount 3, rootTurns 6, actorCallsPerRoot 2 and queuePerAgent 3 (tests/unit/conftest.py)."""

from __future__ import annotations

import pytest

from groupx_site.core.errors import GroupXError
from rooms.models import ClientCommand, Event
from tests.unit.room import claim, command_id, post, queued_turn
from turns.member_actions import check_wake_payload, member_send, send_to_agents
from turns.models import Turn


def caller(actor_id: str = "agent:alpha", hop_count: int = 0) -> tuple[str, str]:
    """(binding, turn) of ``actor_id`` running a Turn the web asked for, at ``hop_count``."""
    turn_id = queued_turn(actor_id)
    Turn.objects.filter(turn_id=turn_id).update(hop_count=hop_count)
    claimed = claim(turn_id)
    return Turn.objects.get(turn_id=claimed.turn_id).binding_id, turn_id


def send(binding: str, *to: str, kind: str = "mcp.send") -> dict:
    body = {"clientCommandId": command_id(), "to": list(to), "content": "please look"}
    return send_to_agents(binding, check_wake_payload(body), command_type=kind)


def refusal(binding: str, *to: str, kind: str = "mcp.send") -> GroupXError:
    before = (
        Turn.objects.count(),
        Event.objects.filter(event_type="message.created").count(),
        ClientCommand.objects.count(),
    )
    with pytest.raises(GroupXError) as refused:
        send(binding, *to, kind=kind)
    # Nothing of the command stays: no message, no Turn, no receipt.
    assert (
        Turn.objects.count(),
        Event.objects.filter(event_type="message.created").count(),
        ClientCommand.objects.count(),
    ) == before
    return refused.value


def loop_stopped() -> list[dict]:
    return list(Event.objects.filter(event_type="routing.loop_stopped").values_list("body", flat=True))


def test_a_child_turn_is_one_hop_deeper_than_its_parent():
    binding, parent = caller(hop_count=1)
    sent = send(binding, "agent:beta")
    child = Turn.objects.get(turn_id=sent["turns"][0]["turnId"])
    assert (child.hop_count, child.parent_turn_id) == (2, parent)


def test_a_send_past_the_hop_limit_is_refused_and_the_stop_is_recorded():
    binding, parent = caller(hop_count=3)
    error = refusal(binding, "agent:beta")
    assert (error.code, error.details["limitKind"]) == ("HOP_LIMIT_REACHED", "hopCount")
    [stopped] = loop_stopped()
    assert (stopped["errorCode"], stopped["parentTurnId"], stopped["commandType"]) == (
        "HOP_LIMIT_REACHED",
        parent,
        "mcp.send",
    )


def test_a_chain_stops_at_its_root_turn_limit():
    first = post(["agent:alpha", "agent:beta", "agent:gamma"])
    turn_id = next(t["turnId"] for t in first["turns"] if t["target"] == "agent:alpha")
    claim(turn_id)
    binding = Turn.objects.get(turn_id=turn_id).binding_id
    send(binding, "agent:beta", "agent:gamma")  # 3 + 2 = 5 Turns in the root
    error = refusal(binding, "agent:beta", "agent:gamma")  # 5 + 2 > 6
    assert (error.code, error.details["limitKind"]) == ("ROOT_TURN_LIMIT_REACHED", "rootTurns")
    assert len(loop_stopped()) == 1


def test_one_agent_is_called_at_most_actor_calls_per_root_times():
    binding, _ = caller()
    send(binding, "agent:beta")
    send(binding, "agent:beta")
    error = refusal(binding, "agent:beta")
    assert (error.code, error.details["limitKind"], error.details["targets"]) == (
        "ROOT_TURN_LIMIT_REACHED",
        "actorCallsPerRoot",
        ["agent:beta"],
    )


def test_a_send_to_a_full_queue_is_refused_without_a_loop_event():
    binding, _ = caller()
    for _ in range(3):
        queued_turn("agent:gamma")
    error = refusal(binding, "agent:gamma")
    assert (error.code, error.details["limit"]) == ("QUEUE_CAPACITY_REACHED", 3)
    assert loop_stopped() == []  # a full queue is back-pressure, not a loop


def test_an_ask_to_an_agent_waiting_up_the_chain_is_a_causal_cycle():
    binding, _ = caller()
    assert refusal(binding, "agent:alpha", kind="mcp.ask").code == "CAUSAL_CYCLE"
    assert send(binding, "agent:alpha")["turns"][0]["target"] == "agent:alpha"  # a send does not wait


def test_an_agents_all_wakes_every_other_agent_but_never_itself():
    binding, _ = caller()
    sent = member_send(binding, {"clientCommandId": command_id(), "to": ["@all"], "content": "everyone"})
    assert [t["target"] for t in sent["turns"]] == ["agent:beta", "agent:gamma"]

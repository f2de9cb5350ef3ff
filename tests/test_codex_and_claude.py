"""Codex (App Server) and Claude Code (stream-json) agents, end to end through a real server.

The fake CLIs speak each real wire protocol; GroupX is observed over HTTP, SSE and the fakes' logs.
"""

from __future__ import annotations

import pytest

from tests.agents import cancel, fake_agents, response_of, send, turn_events, wait_terminal, wire
from tests.server import wait_until
from tests.sse import SseClient

DRIVERS = ["codex", "claude"]


@pytest.fixture
def room(make_server, tmp_path):
    return make_server(fake_agents(tmp_path, "codex", "claude"))


def started(room, turn_id):
    return wait_until(
        lambda: any(e["type"] == "turn.started" for e in turn_events(room, turn_id)), timeout=20, message="turn.started"
    )


def test_a_room_of_all_five_drivers_answers_at_all_each_streaming(make_server, tmp_path):
    room = make_server(fake_agents(tmp_path, "codex", "claude", "kimi", "hermes", "grok"))
    with SseClient(room.base_url, after_seq=0) as stream:
        accepted = send(room, "@all", "roll call [[fake: stream n=3]]")
        terminals = [wait_terminal(room, t["turnId"]) for t in accepted["turns"]]
        stream.wait_for(lambda e: e["eventId"] == max(terminals, key=lambda t: t["seq"])["eventId"])
        streamed = {e["actor"]["actorId"] for e in stream.transient if e["type"] == "turn.content.delta"}

    assert [t["type"] for t in terminals] == ["turn.completed"] * 5
    assert streamed == {f"agent:{d}" for d in ("claude", "codex", "grok", "hermes", "kimi")}


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_streamed_turn_with_reasoning_and_tools_reaches_sse_and_the_records(room, driver):
    with SseClient(room.base_url, after_seq=0) as stream:
        turn_id = send(room, f"agent:{driver}", "go [[fake: reason n=2; tool; stream n=3]]")["turns"][0]["turnId"]
        terminal = wait_terminal(room, turn_id)
        stream.wait_for(lambda e: e["eventId"] == terminal["eventId"])
        live = [e["type"] for e in stream.transient if e["body"].get("turnId") == turn_id]

    assert terminal["type"] == "turn.completed"
    assert {"turn.content.delta", "turn.reasoning.delta", "tool.progress"} <= set(live)
    durable = [e["type"] for e in turn_events(room, turn_id)]
    assert "turn.reasoning.recorded" in durable and "tool.progress.recorded" in durable
    reply = response_of(room, terminal)
    assert reply["actor"]["actorId"] == f"agent:{driver}" and reply["body"]["content"]


@pytest.mark.parametrize(("driver", "native_cancel"), [("codex", "turn/interrupt"), ("claude", "interrupt")])
def test_cancel_mid_stream_goes_through_the_native_interrupt(room, driver, native_cancel):
    turn_id = send(room, f"agent:{driver}", "[[fake: hang]]")["turns"][0]["turnId"]
    started(room, turn_id)

    cancel(room, turn_id)

    assert wait_terminal(room, turn_id)["type"] == "turn.cancelled"
    inbound = [r["msg"] for r in wire(room, driver, kind="in")]
    sent = [m.get("method") or (m.get("request") or {}).get("subtype") for m in inbound]
    assert sent.count(native_cancel) == 1
    after = send(room, f"agent:{driver}", "still there?")["turns"][0]["turnId"]
    assert wait_terminal(room, after)["type"] == "turn.completed"


@pytest.mark.parametrize(("driver", "kind"), [("codex", "command"), ("codex", "file"), ("claude", "can_use_tool")])
def test_a_native_approval_request_fails_the_turn_once(room, driver, kind):
    turn_id = send(room, f"agent:{driver}", f"[[fake: ask kind={kind}]]")["turns"][0]["turnId"]

    terminal = wait_terminal(room, turn_id)

    assert terminal["type"] == "turn.failed"
    assert terminal["body"]["errorCode"] == "UNEXPECTED_NATIVE_INTERACTION"
    assert [e["type"] for e in turn_events(room, turn_id)].count("turn.failed") == 1
    assert all(c.get("ok", True) for c in wire(room, driver, kind="check"))
    following = send(room, f"agent:{driver}", "next")["turns"][0]["turnId"]
    assert wait_terminal(room, following)["type"] == "turn.completed"


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_crash_fails_the_turn_and_the_session_is_rebuilt(room, driver):
    turn_id = send(room, f"agent:{driver}", "[[fake: crash code=7 after=delta]]")["turns"][0]["turnId"]

    terminal = wait_terminal(room, turn_id)

    assert terminal["type"] == "turn.failed"
    assert terminal["body"]["errorCode"] == "PROTOCOL_INVALID_MESSAGE"  # an exit, as on every driver (D38)
    after = send(room, f"agent:{driver}", "back?")["turns"][0]["turnId"]
    assert wait_terminal(room, after)["type"] == "turn.completed"
    assert len(wire(room, driver, kind="start")) == 2


@pytest.mark.parametrize(("driver", "resumed_with"), [("codex", "thread/resume"), ("claude", "--resume")])
def test_after_a_groupx_restart_the_stored_native_session_is_resumed(room, driver, resumed_with):
    first = send(room, f"agent:{driver}", "remember me")["turns"][0]["turnId"]
    wait_terminal(room, first)
    room.stop()
    room.start()

    second = send(room, f"agent:{driver}", "do you?")["turns"][0]["turnId"]
    assert wait_terminal(room, second)["type"] == "turn.completed"

    starts = wire(room, driver, kind="start")
    if driver == "codex":
        threads = [r["msg"] for r in wire(room, driver, kind="out") if "thread" in (r["msg"].get("result") or {})]
        resumes = [r["msg"] for r in wire(room, driver, kind="in") if r["msg"].get("method") == resumed_with]
        assert resumes and resumes[0]["params"]["threadId"] == threads[0]["result"]["thread"]["id"]
    else:
        first_id = starts[0]["argv"][starts[0]["argv"].index("--session-id") + 1]
        assert starts[-1]["argv"][starts[-1]["argv"].index("--resume") + 1] == first_id
    resumed = [
        e for e in room.events() if e["type"] == "session.resumed" and e["actor"]["actorId"] == f"agent:{driver}"
    ]
    assert resumed


def test_a_codex_error_that_will_retry_does_not_fail_the_turn(room):
    turn_id = send(room, "agent:codex", "[[fake: error_notice will_retry=1; echo]]")["turns"][0]["turnId"]

    assert wait_terminal(room, turn_id)["type"] == "turn.completed"


def test_a_late_claude_result_after_an_interrupt_does_not_end_the_next_turn(room):
    first = send(room, "agent:claude", "[[fake: hang complete_on_interrupt=1]]")["turns"][0]["turnId"]
    started(room, first)
    cancel(room, first)
    wait_terminal(room, first)

    second = send(room, "agent:claude", "[[fake: stream n=3 delay_ms=50]]")["turns"][0]["turnId"]
    terminal = wait_terminal(room, second)

    assert terminal["type"] == "turn.completed"
    assert response_of(room, terminal)["body"]["content"].startswith("part-1")

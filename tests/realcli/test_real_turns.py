"""Real CLIs answer Turns through GroupX: session start, streaming with reasoning, the Context
Packet they received, a shell command, cancel mid-stream.

Each test scripts the mock model with its own key; the CLI under test is the real binary from the
cache, launched by GroupX's own driver with GroupX's own argv.
"""

from __future__ import annotations

import time

import pytest

from tests.agents import cancel, turn_events
from tests.realcli.harness import DRIVERS, record, seconds_of

GROUPX_TOOLS = {"send", "publish", "ask", "collect", "read", "watch", "steer"}


def offered_tools(request: dict) -> set[str]:
    """The GroupX tool names a CLI offered its model, whatever its naming scheme."""
    body, names = request["body"], set()
    if request["api"] == "responses":
        for tool in body.get("tools") or []:
            if tool.get("type") == "namespace" and tool.get("name", "").rstrip("_") == "mcp__groupx":
                names |= {t["name"] for t in tool.get("tools") or []}
    elif request["api"] == "messages":
        names = {
            t["name"].removeprefix("mcp__groupx__")
            for t in body.get("tools") or []
            if t.get("name", "").startswith("mcp__groupx__")
        }
    else:
        names = {
            t["function"]["name"].removeprefix("mcp__groupx__")
            for t in body.get("tools") or []
            if t.get("function", {}).get("name", "").startswith("mcp__groupx__")
        }
    return names


def user_text(request: dict) -> str:
    """The prompt as the model received it: the text of the last user message."""
    body = request["body"]
    if request["api"] == "responses":
        users = [i for i in body["input"] if i.get("type", "message") == "message" and i.get("role") == "user"]
        return "\n".join(c.get("text", "") for c in users[-1]["content"] if c.get("type") == "input_text")
    messages = [m for m in body["messages"] if m.get("role") == "user"]
    content = messages[-1]["content"]
    return (
        content
        if isinstance(content, str)
        else "\n".join(b.get("text", "") for b in content if b.get("type") == "text")
    )


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_text_turn_streams_into_the_room_and_completes(room, key, driver):
    answer = f"The real {driver} CLI streams this answer ({key}) to the room in several pieces."
    room.mock.script(
        {"when": key, "steps": [{"text": answer, "chunks": 6, "delay_ms": 40, "reasoning": f"thinking about {key}"}]}
    )
    content = f"Please answer {key}"

    run = room.turn(f"agent:{driver}", content)

    assert run.terminal["type"] == "turn.completed", run.terminal
    record(
        "text turn",
        driver,
        latency_s=round(run.latency, 3),
        first_delta_s=round(run.first_delta or -1, 3),
        deltas=len(run.deltas),
        reasoning_deltas=len(run.reasoning),
    )
    reply = room.event(run.terminal["body"]["responseEventId"])
    assert reply["actor"]["actorId"] == f"agent:{driver}" and reply["actor"]["kind"] == "agent"
    assert reply["replyToEventId"] == run.accepted["messageEventId"]
    assert reply["body"]["content"] == answer
    # it streamed: several transient deltas, in order, that add up to the stored reply
    assert len(run.deltas) >= 2, run.deltas
    assert [d["body"]["chunkIndex"] for d in run.deltas] == list(range(len(run.deltas)))
    assert "".join(d["body"]["text"] for d in run.deltas) == answer
    durable = [e["type"] for e in turn_events(room.server, run.turn_id)]
    assert durable[:3] == ["turn.queued", "turn.dispatched", "turn.started"]
    assert durable[-2:] == ["message.created", "turn.completed"]
    # the model's reasoning (Responses summary, Anthropic thinking, chat reasoning_content) streams too
    assert "".join(r["body"]["text"] for r in run.reasoning) == f"thinking about {key}"
    assert "turn.reasoning.recorded" in durable
    for n in range(2):  # two more plain turns, for the latency figures only
        room.mock.script({"when": f"{key}-{n}", "steps": [{"text": f"again {n}", "chunks": 3}]})
        again = room.turn(f"agent:{driver}", f"Once more {key}-{n}")
        assert again.terminal["type"] == "turn.completed", again.terminal
        record("text turn", driver, latency_s=round(again.latency, 3), first_delta_s=round(again.first_delta or -1, 3))


@pytest.mark.parametrize("driver", DRIVERS)
def test_the_context_packet_reaches_the_model_intact(room, key, driver):
    room.mock.script({"when": key, "steps": [{"text": f"ok {key}"}]})
    content = f"Check the packet {key}"

    run = room.turn(f"agent:{driver}", content)

    assert run.terminal["type"] == "turn.completed", run.terminal
    requests = room.mock.requests(rule=key)
    assert len(requests) == 1, [r["seq"] for r in requests]
    prompt = user_text(requests[0])
    # FEATURES §14: protocol header first, [current_message] last, for every driver
    assert prompt.startswith("[groupx_protocol]\n"), prompt[:300]
    assert f"target: agent:{driver}\n" in prompt
    assert f"current_event_id: {run.accepted['messageEventId']}\n" in prompt
    assert "current_author: user:web" in prompt
    assert f"[configured_agent_identity]\nYou are {driver}, a GroupX conformance-test agent." in prompt
    assert prompt.rstrip().endswith(f"[current_message]\n{content}"), prompt[-300:]
    assert "[groupx_current_message]" not in prompt
    # the CLI offered GroupX's member tools to its model (MCP attached through the binding)
    assert offered_tools(requests[0]) >= GROUPX_TOOLS, offered_tools(requests[0])


@pytest.mark.parametrize("driver", DRIVERS)
def test_cancel_mid_stream_ends_the_turn_cancelled_and_the_agent_answers_again(room, key, driver):
    slow = " ".join(f"tick-{i}" for i in range(80))
    room.mock.script(
        {"when": f"{key}-after", "steps": [{"text": f"back {key}"}]},  # the longer "when" wins
        {"when": key, "steps": [{"text": slow, "chunks": 80, "delay_ms": 200}]},
    )
    cancelled_at: dict[str, float] = {}

    def cancel_after_first_delta(sse, turn_id):
        sse.wait_for(
            lambda e: e["type"] == "turn.content.delta" and e["body"].get("turnId") == turn_id,
            timeout=60,
            message="the first content delta",
        )
        cancelled_at["t"] = time.monotonic()
        assert cancel(room.server, turn_id)["status"] == "cancelling"

    run = room.turn(f"agent:{driver}", f"Stream slowly {key}", on_started=cancel_after_first_delta)

    assert run.terminal["type"] == "turn.cancelled", run.terminal
    cancel_s = run.ended_at - cancelled_at["t"]
    assert cancel_s < 10, cancel_s
    assert 1 <= len(run.deltas) < 80
    durable = [e["type"] for e in turn_events(room.server, run.turn_id)]
    assert "message.created" not in durable and durable[-1] == "turn.cancelled"
    after = room.turn(f"agent:{driver}", f"Are you there {key}-after")
    assert after.terminal["type"] == "turn.completed", after.terminal
    assert room.event(after.terminal["body"]["responseEventId"])["body"]["content"] == f"back {key}"
    record("cancel (POST cancel -> cancelled)", driver, latency_s=round(cancel_s, 3))
    record("turn after a cancel", driver, latency_s=round(after.latency, 3))


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_shell_command_runs_and_shows_as_tool_progress(room, key, driver):
    room.mock.script({"when": key, "steps": [{"shell": f"echo shell-{key}"}, {"text": "shell said: {result}"}]})

    run = room.turn(f"agent:{driver}", f"Run something {key}")

    assert run.terminal["type"] == "turn.completed", run.terminal
    record(
        "shell tool turn",
        driver,
        latency_s=round(run.latency, 3),
        tools=[[t["body"]["nativeType"], t["body"]["details"]] for t in run.tools],
    )
    reply = room.event(run.terminal["body"]["responseEventId"])
    assert f"shell-{key}" in reply["body"]["content"]  # the command's output went back to the model
    phases = [t["body"]["nativeType"] for t in run.tools]
    assert phases.count("tool.started") >= 1 and phases[-1] == "tool.completed", run.tools
    completed = [t["body"] for t in run.tools if t["body"]["nativeType"] == "tool.completed"]
    assert all(t.get("toolCallId") for t in completed)
    assert completed[-1]["details"]["status"] in ("completed", "success"), completed[-1]
    recorded = [e for e in turn_events(room.server, run.turn_id) if e["type"] == "tool.progress.recorded"]
    assert recorded, "tool progress is recorded durably with the turn"


@pytest.mark.parametrize("driver", DRIVERS)
def test_each_session_started_with_mcp_verified(room, driver):
    events = [
        e
        for e in room.server.events()
        if e["type"].startswith("session.") and e["actor"]["actorId"] == f"agent:{driver}"
    ]
    starting = next(e for e in events if e["type"] == "session.starting")
    ready = next(e for e in events if e["type"] == "session.ready")
    assert ready["body"]["mcp"] == "verified" and ready["body"]["continuity"] == "new_session", ready
    assert not [e for e in events if e["type"] == "session.failed"]
    record(
        "session start (spawn -> ready)",
        driver,
        latency_s=round(seconds_of(ready["occurredAt"]) - seconds_of(starting["occurredAt"]), 3),
    )

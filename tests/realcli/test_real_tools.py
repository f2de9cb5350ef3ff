"""A real CLI calls GroupX's MCP member tools and another real CLI answers (docs/CONFORMANCE.md).

The model behind agent A makes A call ``publish`` and then ``ask`` on agent B (a different real
CLI); B's model answers; the ask's result goes back to A's model through A's own MCP client, and
A's final answer quotes it. The room shows each message with the right actor. A second scenario
covers the other tools a model uses in a chain: an ``ask`` that comes back ``pending`` (B is slow),
``collect`` with the ``messageEventId`` the model read from that result, ``send`` (which wakes B)
and ``read``.
"""

from __future__ import annotations

import pytest

from tests.agents import turn_events
from tests.realcli.harness import record
from tests.realcli.mock_model import result_json

# Each CLI asks the next one, so every driver is both an asker and an answerer.
RING = {"codex": "claude", "claude": "hermes", "hermes": "codex"}


@pytest.mark.parametrize("driver", list(RING))
def test_publish_then_ask_another_real_agent(room, key, driver):
    target = RING[driver]
    question_key, answer = f"Q{key}", f"answer-{key} from {target}"
    room.mock.script(
        {"when": question_key, "steps": [{"text": answer, "chunks": 2}]},
        {
            "when": key,
            "steps": [
                {"tool": "publish", "args": {"content": f"progress {key}", "clientCommandId": f"pub-{key}"}},
                {
                    "tool": "ask",
                    "args": {
                        "to": [f"agent:{target}"],
                        "content": f"question {question_key}",
                        "clientCommandId": f"ask-{key}",
                        "timeoutMs": 60000,
                    },
                },
                {"text": "asked and got: {result}", "chunks": 2},
            ],
        },
    )

    run = room.turn(f"agent:{driver}", f"Coordinate please {key}", timeout=120)

    assert run.terminal["type"] == "turn.completed", run.terminal
    record(
        f"publish + ask -> {target}",
        driver,
        latency_s=round(run.latency, 3),
        tools=[[t["body"]["nativeType"], t["body"]["details"]] for t in run.tools],
    )
    events = room.server.events()
    by_content = {e["body"].get("content"): e for e in events if e["type"] == "message.created"}
    published = by_content[f"progress {key}"]
    assert published["actor"]["actorId"] == f"agent:{driver}" and published["to"] == []
    assert published["provenance"]["sourceKind"] == "mcp"
    question = by_content[f"question {question_key}"]
    assert question["actor"]["actorId"] == f"agent:{driver}" and question["to"] == [f"agent:{target}"]
    assert question["provenance"]["sourceKind"] == "mcp"
    target_reply = by_content[answer]
    assert target_reply["actor"]["actorId"] == f"agent:{target}"
    assert target_reply["replyToEventId"] == question["eventId"]
    assert published["seq"] < question["seq"] < target_reply["seq"]
    # the ask's result travelled back to the asker's model through the real CLI's MCP client
    final = room.event(run.terminal["body"]["responseEventId"])
    assert final["actor"]["actorId"] == f"agent:{driver}"
    # (Hermes starts the text that follows a tool call with "\n\n"; GroupX stores it as sent)
    assert final["body"]["content"].lstrip().startswith("asked and got: ") and answer in final["body"]["content"]
    assert final["seq"] > target_reply["seq"]
    # the model saw each step once, the publish result (its messageEventId) before asking
    steps = [r["step"] for r in room.mock.requests(rule=key)]
    assert steps == [0, 1, 2], steps
    assert published["eventId"] in room.mock.requests(rule=key)[1]["tool_result"]
    # tool progress: the two MCP calls were reported live and recorded durably
    started = [t["body"]["details"] for t in run.tools if t["body"]["nativeType"] == "tool.started"]
    assert any("publish" in str(d) for d in started) and any("ask" in str(d) for d in started), started
    assert "tool.progress.recorded" in [e["type"] for e in turn_events(room.server, run.turn_id)]


@pytest.mark.parametrize("driver", list(RING))
def test_an_ask_to_a_slow_agent_is_pending_then_collected_and_send_and_read_work(room, key, driver):
    target = RING[driver]
    slow_key, note_key = f"S{key}", f"N{key}"
    slow_answer = f"slow-answer-{key}"
    room.mock.script(
        {"when": slow_key, "steps": [{"text": slow_answer, "chunks": 10, "delay_ms": 300}]},
        {"when": note_key, "steps": [{"text": f"noted {key}"}]},
        {
            "when": key,
            "steps": [
                {
                    "tool": "ask",
                    "args": {
                        "to": [f"agent:{target}"],
                        "content": f"take your time {slow_key}",
                        "clientCommandId": f"ask-{key}",
                        "timeoutMs": 500,
                    },
                },
                {"tool": "collect", "args": {"messageEventId": "{json:messageEventId}", "timeoutMs": 30000}},
                {
                    "tool": "send",
                    "args": {
                        "to": [f"agent:{target}"],
                        "content": f"for the record {note_key}",
                        "clientCommandId": f"send-{key}",
                    },
                },
                {"tool": "read", "args": {}},
                {"text": "done {result}", "chunks": 1},
            ],
        },
    )

    run = room.turn(f"agent:{driver}", f"Ask, collect, send, read {key}", timeout=120)

    assert run.terminal["type"] == "turn.completed", run.terminal
    record(f"ask(pending)+collect+send+read -> {target}", driver, latency_s=round(run.latency, 3))
    results = {r["step"]: r.get("tool_result") or "" for r in room.mock.requests(rule=key)}
    assert sorted(results) == [0, 1, 2, 3, 4]
    asked = result_json(results[1])
    assert asked["state"] == "pending" and asked["results"][0]["status"] in ("pending", "running"), asked
    collected = result_json(results[2])
    assert collected["state"] == "terminal" and collected["results"][0]["content"] == slow_answer, collected
    sent = result_json(results[3])
    assert sent["turns"][0]["target"] == f"agent:{target}" and sent["turns"][0]["status"] == "queued", sent
    read = result_json(results[4])
    assert any(e.get("body", {}).get("content") == slow_answer for e in read.get("events", [])), read
    note = next(
        e
        for e in room.server.events()
        if e["type"] == "message.created" and e["body"].get("content") == f"for the record {note_key}"
    )
    assert note["actor"]["actorId"] == f"agent:{driver}" and note["to"] == [f"agent:{target}"]
    # the send woke the target: its own Turn answers the note
    noted = room.turn_of(sent["turns"][0]["turnId"], timeout=60)
    assert noted["type"] == "turn.completed"
    assert room.event(noted["body"]["responseEventId"])["body"]["content"] == f"noted {key}"

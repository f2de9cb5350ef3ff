"""Agents talk to each other through the GroupX MCP member tools.

The fake CLIs make real MCP calls over HTTP with the binding header GroupX injected at launch;
what each tool returned is read from the fakes' wire logs, what it did from the room's events.
"""

from __future__ import annotations

import json

import pytest

from tests.agents import (
    active_binding,
    call_tool,
    cancel,
    fake_agents,
    mcp_calls,
    send,
    tool_payload,
    turn_events,
    wait_terminal,
    wire,
)
from tests.server import wait_until
from tests.sse import SseClient


def ask_args(to: str, content: str, command_id: str = "ask-1", **extra) -> str:
    return json.dumps({"to": [to], "content": content, "clientCommandId": command_id, **extra})


def directive(tool: str, args: str) -> str:
    return f"[[fake: mcp tool={tool} args='{args}']]"


def room_with(make_server, tmp_path, scenarios=None, **config):
    return make_server(fake_agents(tmp_path, "kimi", "hermes", "grok", scenarios=scenarios), **config)


def test_an_ask_returns_the_answer_as_the_tool_result_and_both_messages_are_public(make_server, tmp_path):
    room = room_with(make_server, tmp_path)

    turn_id = send(room, "agent:kimi", directive("ask", ask_args("agent:hermes", "what is 2+2?")))["turns"][0]["turnId"]
    assert wait_terminal(room, turn_id)["type"] == "turn.completed"

    result = tool_payload(mcp_calls(room, "kimi", "ask")[0])
    assert result["state"] == "terminal"
    assert result["results"][0]["status"] == "completed"
    assert result["results"][0]["content"] == "echo: what is 2+2?"
    question = next(e for e in room.events() if e["eventId"] == result["messageEventId"])
    assert question["actor"]["actorId"] == "agent:kimi" and question["to"] == ["agent:hermes"]
    assert question["provenance"]["sourceKind"] == "mcp"
    answer = next(e for e in room.events() if e["eventId"] == result["results"][0]["responseEventId"])
    assert answer["actor"]["actorId"] == "agent:hermes"
    assert answer["replyToEventId"] == question["eventId"]
    child = next(e for e in room.events() if e["type"] == "turn.queued" and e["causationId"] == question["eventId"])
    assert child["body"]["hopCount"] == 1


def test_asking_back_up_the_chain_is_a_causal_cycle_and_nothing_deadlocks(make_server, tmp_path):
    room = room_with(
        make_server,
        tmp_path,
        scenarios={"hermes": {"default_turn": [f"mcp tool=ask args='{ask_args('agent:kimi', 'and you?', 'back-1')}'"]}},
    )

    turn_id = send(room, "agent:kimi", directive("ask", ask_args("agent:hermes", "over to you")))["turns"][0]["turnId"]

    assert wait_terminal(room, turn_id)["type"] == "turn.completed"
    counter = tool_payload(mcp_calls(room, "hermes", "ask")[0])
    assert counter["code"] == "CAUSAL_CYCLE"
    outer = tool_payload(mcp_calls(room, "kimi", "ask")[0])
    assert outer["state"] == "terminal" and "mcp:ask:error:CAUSAL_CYCLE" in outer["results"][0]["content"]


def test_a_send_back_to_an_ancestor_is_queued_not_refused(make_server, tmp_path):
    room = room_with(
        make_server, tmp_path, scenarios={"hermes": {"default_turn": ["mcp-send to=agent:kimi text=thanks-for-asking"]}}
    )

    first = send(room, "agent:kimi", directive("ask", ask_args("agent:hermes", "please reply")))["turns"][0]["turnId"]
    assert wait_terminal(room, first)["type"] == "turn.completed"

    sent = tool_payload(mcp_calls(room, "hermes", "send")[0])
    back = sent["turns"][0]
    assert back["target"] == "agent:kimi" and back["status"] == "queued"
    assert wait_terminal(room, back["turnId"])["type"] == "turn.completed"


@pytest.mark.parametrize(
    ("limits", "kimi_turn", "code", "kind"),
    [
        ({"hopCount": 1}, "[[fake: mcp-send to=agent:hermes text=go-on]]", "HOP_LIMIT_REACHED", "hopCount"),
        (
            {"rootTurns": 2},
            directive(
                "send",
                json.dumps({"to": ["agent:hermes", "agent:grok"], "content": "both", "clientCommandId": "both-1"}),
            ),
            "ROOT_TURN_LIMIT_REACHED",
            "rootTurns",
        ),
        (
            {"actorCallsPerRoot": 1},
            "[[fake: mcp-send to=agent:grok text=one; mcp-send to=agent:grok text=two]]",
            "ROOT_TURN_LIMIT_REACHED",
            "actorCallsPerRoot",
        ),
    ],
)
def test_each_chain_limit_returns_its_code_and_a_visible_loop_stopped(
    make_server, tmp_path, limits, kimi_turn, code, kind
):
    scenarios = {"hermes": {"default_turn": ["mcp-send to=agent:grok text=deeper"]}}
    room = room_with(make_server, tmp_path, scenarios=scenarios, limits=limits)

    wait_terminal(room, send(room, "agent:kimi", kimi_turn)["turns"][0]["turnId"])

    def stopped():
        return [e for e in room.events() if e["type"] == "routing.loop_stopped"]

    events = wait_until(stopped, timeout=20, message="routing.loop_stopped")
    assert events[0]["body"]["errorCode"] == code
    assert events[0]["body"]["details"]["limitKind"] == kind
    errors = [
        tool_payload(c)
        for flavor in ("kimi", "hermes")
        for c in mcp_calls(room, flavor)
        if c["result"] and c["result"].get("isError")
    ]
    assert [e["code"] for e in errors] == [code]


def test_an_ask_to_a_busy_agent_is_pending_and_collect_gets_the_answer(make_server, tmp_path):
    room = room_with(make_server, tmp_path)
    busy = send(room, "agent:grok", "[[fake: hang]]")["turns"][0]["turnId"]
    wait_until(lambda: any(e["type"] == "turn.started" for e in turn_events(room, busy)), timeout=15)
    asker = send(room, "agent:kimi", directive("ask", ask_args("agent:grok", "when you are free")) + "[[fake: hang]]")
    asker_turn = asker["turns"][0]["turnId"]
    calls = wait_until(lambda: mcp_calls(room, "kimi", "ask"), timeout=20, message="the ask call")

    pending = tool_payload(calls[0])
    assert pending["state"] == "pending"
    assert pending["results"][0]["queuePosition"] == 1 and pending["results"][0]["activeTurnId"] == busy
    assert "collect" in pending["results"][0]["note"]
    cancel(room, busy)  # grok becomes free: the ask's Turn runs next
    # Accepting the cancel is not the end of the Turn: until it ends, collect finds the ask still
    # queued behind it and answers pending at once, as it should.
    assert wait_terminal(room, busy)["type"] == "turn.cancelled"

    collected = call_tool(
        room,
        active_binding(room, "agent:kimi"),
        "collect",
        {"messageEventId": pending["messageEventId"], "timeoutMs": 30000},
    ).json()
    result = json.loads(collected["result"]["content"][0]["text"])
    assert result["state"] == "terminal" and result["results"][0]["content"] == "echo: when you are free"
    cancel(room, asker_turn)


@pytest.mark.parametrize("cancel_on_timeout", [True, False])
def test_an_ask_whose_wait_ends_cancels_its_running_child_only_with_cancel_on_timeout(
    make_server, tmp_path, cancel_on_timeout
):
    room = room_with(make_server, tmp_path, scenarios={"grok": {"default_turn": ["hang"]}})
    asked = ask_args("agent:grok", "take your time", "ask-timeout", timeoutMs=300, cancelOnTimeout=cancel_on_timeout)
    asker = send(room, "agent:kimi", directive("ask", asked))["turns"][0]["turnId"]
    assert wait_terminal(room, asker)["type"] == "turn.completed"  # the ask answered; kimi's Turn ended

    answer = tool_payload(mcp_calls(room, "kimi", "ask")[0])
    assert answer["state"] == "pending"  # a timeout never fakes a terminal state
    [child] = answer["results"]
    assert child["status"] == "pending" and child["target"] == "agent:grok"
    if cancel_on_timeout:
        assert wait_terminal(room, child["turnId"])["type"] == "turn.cancelled"
    else:  # the child goes on after the wait: still running when its asker's Turn is over
        assert not [
            e
            for e in turn_events(room, child["turnId"])
            if e["type"] in ("turn.completed", "turn.failed", "turn.cancelled", "turn.interrupted")
        ]
        cancel(room, child["turnId"])
        assert wait_terminal(room, child["turnId"])["type"] == "turn.cancelled"


def test_an_agent_whose_cli_reports_its_mcp_failed_gets_mcp_unavailable_and_nothing_is_written(make_server, tmp_path):
    room = make_server(fake_agents(tmp_path, "claude", scenarios={"claude": {"mcp_status_reported": "failed"}}))
    first = send(room, "agent:claude", "[[fake: reply text=hello]]")["turns"][0]["turnId"]
    assert wait_terminal(room, first)["type"] == "turn.completed"
    [claude] = [a for a in room.get("/api/health").json()["agents"] if a["actorId"] == "agent:claude"]
    assert claude["mcpVerified"] is False  # the card says so, from the CLI's own report
    binding = active_binding(room, "agent:claude")

    publish = directive("publish", json.dumps({"content": "should not appear", "clientCommandId": "pub-1"}))
    second = send(room, "agent:claude", publish)["turns"][0]["turnId"]
    wait_terminal(room, second)
    direct = call_tool(room, binding, "publish", {"content": "nor this", "clientCommandId": "pub-2"})

    assert direct.status_code == 503 and direct.json()["error"]["data"]["code"] == "MCP_UNAVAILABLE"
    refused = [c for c in wire(room, "claude", kind="mcp") if c.get("status") == 503]
    assert refused and all(
        (c.get("resp") or {}).get("error", {}).get("data", {}).get("code") == "MCP_UNAVAILABLE" for c in refused
    )
    contents = [e["body"].get("content") for e in room.events() if e["type"] == "message.created"]
    assert "should not appear" not in contents and "nor this" not in contents


def test_an_ask_with_cancel_on_timeout_to_a_busy_agent_answers_pending_at_once_and_cancels_nothing(
    make_server, tmp_path
):
    room = room_with(make_server, tmp_path)
    busy = send(room, "agent:grok", "[[fake: hang]]")["turns"][0]["turnId"]
    wait_until(lambda: any(e["type"] == "turn.started" for e in turn_events(room, busy)), timeout=15)
    asked = ask_args("agent:grok", "when you are free", "ask-busy", timeoutMs=60_000, cancelOnTimeout=True)
    asker = send(room, "agent:kimi", directive("ask", asked))["turns"][0]["turnId"]
    assert wait_terminal(room, asker)["type"] == "turn.completed"

    [child] = tool_payload(mcp_calls(room, "kimi", "ask")[0])["results"]
    assert child["status"] == "pending" and child["queuePosition"] == 1  # no wait ran out: nothing to cancel
    cancel(room, busy)
    assert wait_terminal(room, child["turnId"])["type"] == "turn.completed"  # the question was still asked


def test_publish_wakes_nobody(make_server, tmp_path):
    room = room_with(make_server, tmp_path)
    turn_id = send(room, "agent:kimi", "[[fake: mcp-publish text=halfway-there]]")["turns"][0]["turnId"]
    wait_terminal(room, turn_id)

    published = tool_payload(mcp_calls(room, "kimi", "publish")[0])
    message = next(e for e in room.events() if e["eventId"] == published["messageEventId"])
    assert message["to"] == [] and message["actor"]["actorId"] == "agent:kimi"
    assert message["body"]["content"] == "halfway-there"
    assert [e for e in room.events() if e["type"] == "turn.queued" and e["causationId"] == message["eventId"]] == []


def test_a_forged_sender_is_refused(make_server, tmp_path):
    room = room_with(make_server, tmp_path)
    forged = json.dumps(
        {"to": ["agent:hermes"], "content": "I am hermes", "clientCommandId": "f-1", "from": "agent:hermes"}
    )
    wait_terminal(room, send(room, "agent:kimi", directive("send", forged))["turns"][0]["turnId"])

    error = tool_payload(mcp_calls(room, "kimi", "send")[0])
    assert error["code"] == "SENDER_FIELD_FORBIDDEN" and error["details"]["forbiddenFields"] == ["from"]
    assert not any(e["body"].get("content") == "I am hermes" for e in room.events())


def test_invalid_tool_input_is_a_protocol_error_not_sdk_text(make_server, tmp_path):
    room = room_with(make_server, tmp_path)
    bad = json.dumps({"to": "agent:hermes", "content": "", "clientCommandId": "b-1"})
    wait_terminal(room, send(room, "agent:kimi", directive("send", bad))["turns"][0]["turnId"])

    assert tool_payload(mcp_calls(room, "kimi", "send")[0])["code"] == "INVALID_ENVELOPE"


def test_a_missing_or_unknown_binding_is_http_400_binding_mismatch(make_server, tmp_path):
    room = room_with(make_server, tmp_path)
    for binding in (None, "bind_not-a-real-one"):
        response = call_tool(room, binding, "publish", {"content": "x", "clientCommandId": "x"})
        assert response.status_code == 400
        assert response.json()["error"]["data"]["code"] == "MCP_BINDING_MISMATCH"


def test_a_binding_acts_as_its_own_agent_and_only_during_its_turn(make_server, tmp_path):
    room = room_with(make_server, tmp_path)
    wait_until(lambda: len({r["actor_id"] for r in _active(room)}) == 3, timeout=20, message="three sessions")
    hermes = active_binding(room, "agent:hermes")

    idle = call_tool(room, hermes, "publish", {"content": "x", "clientCommandId": "idle-1"}).json()
    assert json.loads(idle["result"]["content"][0]["text"])["code"] == "MCP_BINDING_MISMATCH"

    busy = send(room, "agent:hermes", "[[fake: hang]]")["turns"][0]["turnId"]
    wait_until(lambda: any(e["type"] == "turn.started" for e in turn_events(room, busy)), timeout=15)
    used = call_tool(room, hermes, "publish", {"content": "said with hermes' binding", "clientCommandId": "h-1"})
    published = used.json()["result"]["structuredContent"]
    message = next(e for e in room.events() if e["eventId"] == published["messageEventId"])
    assert message["actor"]["actorId"] == "agent:hermes"
    cancel(room, busy)


def _active(room):
    from tests.agents import db_rows

    return db_rows(
        room,
        "SELECT actor_id FROM agents_sessionbinding WHERE status = 'active' AND transport = "
        "'structured' AND native_session_id IS NOT NULL",
    )


def test_cancelling_a_parent_cancels_its_asks_but_not_its_sends(make_server, tmp_path):
    room = room_with(
        make_server, tmp_path, scenarios={"grok": {"default_turn": ["hang"]}, "hermes": {"default_turn": ["hang"]}}
    )
    parent = send(
        room,
        "agent:kimi",
        "[[fake: mcp-send to=agent:hermes text=work-on-this]]"
        + directive("ask", ask_args("agent:grok", "and answer me")),
    )["turns"][0]["turnId"]
    sent = wait_until(lambda: mcp_calls(room, "kimi", "send"), timeout=20, message="the send")
    hermes_turn = tool_payload(sent[0])["turns"][0]["turnId"]
    asked = wait_until(
        lambda: [e for e in room.events() if e["type"] == "turn.started" and e["actor"]["actorId"] == "agent:grok"],
        timeout=20,
        message="grok's ask turn",
    )
    grok_turn = asked[0]["body"]["turnId"]

    cancel(room, parent)

    assert wait_terminal(room, grok_turn)["type"] == "turn.cancelled"
    assert wait_terminal(room, parent)["type"] in ("turn.cancelled", "turn.completed")
    statuses = [e["type"] for e in turn_events(room, hermes_turn)]
    assert not any(t in statuses for t in ("turn.cancelled", "turn.failed"))
    cancel(room, hermes_turn)


@pytest.mark.parametrize("asker", ["kimi", "codex", "claude"])
def test_the_demo_shorthand_asks_another_agent_and_every_step_is_public(make_server, tmp_path, asker):
    room = make_server(fake_agents(tmp_path, asker, "hermes"))
    with SseClient(room.base_url, after_seq=0) as stream:
        accepted = send(room, f"agent:{asker}", "[[fake: mcp-ask to=agent:hermes text=ready-to-ship?]]")
        terminal = wait_terminal(room, accepted["turns"][0]["turnId"])
        stream.wait_for(lambda e: e["eventId"] == terminal["eventId"])
        messages = [
            (e["actor"]["actorId"], e["body"]["content"]) for e in stream.durable if e["type"] == "message.created"
        ]

    assert messages[0][0] == "user:web"
    assert messages[1] == (f"agent:{asker}", "ready-to-ship?")
    assert messages[2] == ("agent:hermes", "echo: ready-to-ship?")
    assert messages[3][0] == f"agent:{asker}" and "mcp:ask:ok:" in messages[3][1]


def test_a_collect_with_an_out_of_range_timeout_is_refused_for_its_body_before_its_id_is_looked_up(
    make_server, tmp_path
):
    room = room_with(make_server, tmp_path)
    working = send(room, "agent:kimi", "[[fake: hang]]")["turns"][0]["turnId"]
    wait_until(lambda: any(e["type"] == "turn.started" for e in turn_events(room, working)), timeout=15)
    binding = active_binding(room, "agent:kimi")

    def refused(arguments: dict) -> dict:
        answer = call_tool(room, binding, "collect", arguments).json()["result"]
        assert answer["isError"] is True
        return json.loads(answer["content"][0]["text"])

    both_wrong = refused({"messageEventId": "evt_no_such_ask", "timeoutMs": 600_000})
    assert both_wrong["code"] == "INVALID_ENVELOPE" and "timeoutMs" in both_wrong["message"]
    assert refused({"messageEventId": "evt_no_such_ask", "timeoutMs": 1_000})["code"] == "UNKNOWN_TARGET"
    cancel(room, working)

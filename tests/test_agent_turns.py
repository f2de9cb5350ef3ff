"""Agents answer: lanes, the Turn lifecycle and the ACP drivers, end to end.

A real daphne server runs the fake ACP CLIs (kimi, hermes, grok) over their real wire protocol;
everything is observed through HTTP, SSE, the fakes' wire logs and (read-only) the SQLite file.
"""

from __future__ import annotations

import pytest

from tests.agents import (
    cancel,
    db_rows,
    db_write,
    fake_agents,
    prompts_sent,
    response_of,
    send,
    turn_events,
    wait_terminal,
    wire,
)
from tests.server import wait_until
from tests.sse import SseClient


@pytest.fixture
def room(make_server, tmp_path):
    return make_server(fake_agents(tmp_path, "kimi", "hermes", "grok"))


def test_one_target_streams_its_answer_and_completes(room):
    with SseClient(room.base_url, after_seq=0) as stream:
        accepted = send(room, "agent:kimi", "hello [[fake: reason n=2; tool; stream n=3]]")
        turn_id = accepted["turns"][0]["turnId"]
        terminal = wait_terminal(room, turn_id)
        stream.wait_for(lambda e: e["eventId"] == terminal["eventId"])
        deltas = [e for e in stream.transient if e["type"] == "turn.content.delta"]
        reasoning = [e for e in stream.transient if e["type"] == "turn.reasoning.delta"]
        tools = [e for e in stream.transient if e["type"] == "tool.progress"]

    assert terminal["type"] == "turn.completed"
    assert [d["body"]["chunkIndex"] for d in deltas] == [0, 1, 2]
    assert all(d["body"]["turnId"] == turn_id and d["seq"] is None for d in deltas)
    assert len(reasoning) == 2 and tools and all(t["body"].get("toolCallId") for t in tools)

    durable = [e["type"] for e in turn_events(room, turn_id)]
    assert durable == [
        "turn.queued",
        "turn.dispatched",
        "turn.started",
        "turn.reasoning.recorded",
        *["tool.progress.recorded"] * durable.count("tool.progress.recorded"),
        "message.created",
        "turn.completed",
    ]
    reply = response_of(room, terminal)
    assert reply["actor"]["actorId"] == "agent:kimi" and reply["actor"]["kind"] == "agent"
    assert reply["actor"]["instanceId"]
    assert reply["replyToEventId"] == accepted["messageEventId"]
    assert reply["body"]["content"] == "".join(d["body"]["text"] for d in deltas)

    attempt = db_rows(room, "SELECT * FROM turns_turnattempt WHERE turn_id = ?", turn_id)
    assert len(attempt) == 1
    assert attempt[0]["dispatch_phase"] == "terminal" and attempt[0]["delivery_certainty"] == "delivered"
    assert attempt[0]["prompt_invoked_at"] and attempt[0]["started_at"]
    turn = db_rows(room, "SELECT * FROM turns_turn WHERE turn_id = ?", turn_id)[0]
    assert turn["status"] == "completed" and turn["response_event_id"] == reply["eventId"]


def test_at_all_runs_three_agents_in_parallel_and_one_failure_spares_the_others(make_server, tmp_path):
    room = make_server(
        fake_agents(tmp_path, "kimi", "hermes", "grok", scenarios={"hermes": {"default_turn": ["fail"]}})
    )

    accepted = send(room, "@all", "everyone, report in")
    terminals = {t["target"]: wait_terminal(room, t["turnId"]) for t in accepted["turns"]}

    assert terminals["agent:kimi"]["type"] == "turn.completed"
    assert terminals["agent:grok"]["type"] == "turn.completed"
    assert terminals["agent:hermes"]["type"] == "turn.failed"
    assert terminals["agent:hermes"]["body"]["errorCode"] == "TURN_INTERRUPTED"  # a model error (D38)
    replies = {
        response_of(room, t)["actor"]["actorId"]: response_of(room, t)["body"]["content"]
        for t in terminals.values()
        if t["type"] == "turn.completed"
    }
    assert replies == {"agent:kimi": "echo: everyone, report in", "agent:grok": "echo: everyone, report in"}


def test_a_lane_is_fifo_while_another_lane_runs(room):
    hanging = send(room, "agent:grok", "[[fake: hang]]")["turns"][0]["turnId"]
    first = [
        send(room, "agent:kimi", f"job {i} [[fake: stream n=2 delay_ms=20]]")["turns"][0]["turnId"] for i in range(3)
    ]

    terminals = [wait_terminal(room, turn_id) for turn_id in first]

    assert [t["type"] for t in terminals] == ["turn.completed"] * 3
    assert [t["seq"] for t in terminals] == sorted(t["seq"] for t in terminals)
    starts = [next(e["seq"] for e in turn_events(room, t) if e["type"] == "turn.started") for t in first]
    assert starts == sorted(starts)
    ends_before_next_start = [terminals[i]["seq"] < starts[i + 1] for i in range(2)]
    assert all(ends_before_next_start)
    status = db_rows(room, "SELECT status FROM turns_turn WHERE turn_id = ?", hanging)[0]["status"]
    assert status == "running"
    cancel(room, hanging)
    assert wait_terminal(room, hanging)["type"] == "turn.cancelled"


def test_cancelling_a_queued_turn_is_immediate_and_a_running_one_goes_through_the_cli(room):
    running = send(room, "agent:kimi", "[[fake: hang]]")["turns"][0]["turnId"]
    queued = send(room, "agent:kimi", "after the hang")["turns"][0]["turnId"]
    wait_until(lambda: any(e["type"] == "turn.started" for e in turn_events(room, running)), timeout=15)

    assert cancel(room, queued) == {
        "turnId": queued,
        "accepted": True,
        "status": "cancelled",
        "transport": "structured",
    }
    assert wait_terminal(room, queued)["type"] == "turn.cancelled"

    answer = cancel(room, running)
    assert answer["accepted"] is True and answer["status"] == "cancelling"
    terminal = wait_terminal(room, running)
    assert terminal["type"] == "turn.cancelled"
    assert [m["method"] for m in prompts_sent(room, "kimi", "session/cancel")] == ["session/cancel"]
    assert cancel(room, running)["accepted"] is False  # already terminal
    # the cancelled queued turn never reached the CLI
    assert all("after the hang" not in str(p) for p in prompts_sent(room, "kimi"))


def test_cancel_rejects_unknown_and_malformed_turns(room):
    assert room.post("/api/turns/turn_nope/cancel", {"clientCommandId": "x"}).status_code == 404
    assert room.post("/api/turns/bad id/cancel", {"clientCommandId": "x"}).status_code == 400
    turn_id = send(room, "agent:kimi", "hi")["turns"][0]["turnId"]
    response = room.post(f"/api/turns/{turn_id}/cancel", {"clientCommandId": "y", "transport": "direct"})
    assert response.status_code == 400 and response.json()["error"]["code"] == "INVALID_ENVELOPE"


def test_a_crash_fails_its_turn_once_and_the_next_turn_runs_on_a_rebuilt_session(room):
    crashed = send(room, "agent:kimi", "[[fake: crash code=7 after=delta]]")["turns"][0]["turnId"]
    terminal = wait_terminal(room, crashed)
    assert terminal["type"] == "turn.failed"
    assert terminal["body"]["errorCode"] == "PROTOCOL_INVALID_MESSAGE"

    after = send(room, "agent:kimi", "are you back?")["turns"][0]["turnId"]
    assert wait_terminal(room, after)["type"] == "turn.completed"

    instances = {
        e["actor"].get("instanceId")
        for e in turn_events(room, crashed) + turn_events(room, after)
        if e["type"] == "turn.started"
    }
    assert len(instances) == 2  # a new instance, the same actor
    kimi_sessions = [
        e for e in room.events() if e["type"].startswith("session.") and e["actor"]["actorId"] == "agent:kimi"
    ]
    assert "session.resumed" in [e["type"] for e in kimi_sessions]
    assert len([t for t in [crashed, after] if wait_terminal(room, t)["type"] == "turn.failed"]) == 1
    loads = prompts_sent(room, "kimi", "session/load")
    assert len(loads) == 1


def test_a_garbage_line_fails_the_turn_with_protocol_invalid_message(room):
    turn_id = send(room, "agent:hermes", "[[fake: garbage kind=not_json]]")["turns"][0]["turnId"]

    terminal = wait_terminal(room, turn_id)

    assert terminal["type"] == "turn.failed" and terminal["body"]["errorCode"] == "PROTOCOL_INVALID_MESSAGE"
    assert wait_terminal(room, send(room, "agent:hermes", "ok?")["turns"][0]["turnId"])["type"] == "turn.completed"


def test_a_permission_request_fails_only_its_turn_and_the_cli_sees_cancelled_then_cancel(room):
    turn_id = send(room, "agent:kimi", "[[fake: ask kind=permission]]")["turns"][0]["turnId"]

    terminal = wait_terminal(room, turn_id)

    assert terminal["type"] == "turn.failed"
    assert terminal["body"]["errorCode"] == "UNEXPECTED_NATIVE_INTERACTION"
    assert [e["type"] for e in turn_events(room, turn_id)].count("turn.failed") == 1
    inbound = [r["msg"] for r in wire(room, "kimi", kind="in")]
    reply_index = next(
        i for i, m in enumerate(inbound) if m.get("result", {}).get("outcome", {}).get("outcome") == "cancelled"
    )
    cancel_index = next(i for i, m in enumerate(inbound) if m.get("method") == "session/cancel")
    assert reply_index < cancel_index
    assert not any(e["type"].startswith(("approval.", "permission.")) for e in room.events())

    following = send(room, "agent:kimi", "next one")["turns"][0]["turnId"]
    assert wait_terminal(room, following)["type"] == "turn.completed"


def test_a_silent_agent_hits_the_idle_timeout(make_server, tmp_path):
    room = make_server(fake_agents(tmp_path, "kimi"), timeouts={"idleMs": 800, "closeMs": 300})

    turn_id = send(room, "agent:kimi", "[[fake: idle after=1]]")["turns"][0]["turnId"]
    terminal = wait_terminal(room, turn_id)

    assert terminal["type"] == "turn.failed" and terminal["body"]["errorCode"] == "TURN_IDLE_TIMEOUT"
    assert wait_terminal(room, send(room, "agent:kimi", "again")["turns"][0]["turnId"])["type"] == "turn.completed"


def test_sigkill_mid_turn_interrupts_that_turn_on_restart_and_never_resends_it(room):
    running = send(room, "agent:kimi", "[[fake: hang]]")["turns"][0]["turnId"]
    waiting = send(room, "agent:kimi", "still queued")["turns"][0]["turnId"]
    wait_until(lambda: any(e["type"] == "turn.started" for e in turn_events(room, running)), timeout=15)

    room.kill()
    room.start()

    terminal = wait_terminal(room, running)
    assert terminal["type"] == "turn.interrupted"
    assert terminal["body"]["errorCode"] == "TURN_INTERRUPTED"
    assert wait_terminal(room, waiting)["type"] == "turn.completed"
    hang_prompts = [p for p in prompts_sent(room, "kimi") if "[[fake: hang]]" in str(p)]
    assert len(hang_prompts) == 1
    attempt = db_rows(room, "SELECT * FROM turns_turnattempt WHERE turn_id = ?", running)[0]
    assert attempt["delivery_certainty"] == "delivered"  # never downgraded to unknown


def test_a_claimed_turn_snapshotted_under_another_transport_fails_on_restart_and_is_never_sent(room):
    running = send(room, "agent:kimi", "[[fake: hang]]")["turns"][0]["turnId"]
    crafted = send(room, "agent:kimi", "[[fake: echo]] older transport")["turns"][0]["turnId"]
    wait_until(lambda: any(e["type"] == "turn.started" for e in turn_events(room, running)), timeout=15)
    room.kill()
    # What an older build could leave: claimed, never prompted, under a transport no longer selected.
    db_write(room, "UPDATE turns_turn SET status = 'dispatching', transport = 'terminal' WHERE turn_id = ?", crafted)
    room.start()

    terminal = wait_terminal(room, crafted)
    assert terminal["type"] == "turn.failed"
    assert terminal["body"]["errorCode"] == "TRANSPORT_MODE_MISMATCH"
    assert wait_terminal(room, running)["type"] == "turn.interrupted"
    assert not [p for p in prompts_sent(room, "kimi") if "older transport" in str(p)]


@pytest.mark.parametrize(
    ("flavor", "argv", "mode"),
    [
        ("kimi", ["acp"], "auto"),
        ("hermes", ["--yolo", "acp"], "dont_ask"),
        (
            "grok",
            [
                "--no-auto-update",
                "--permission-mode",
                "bypassPermissions",
                "--sandbox",
                "off",
                "--no-plan",
                "agent",
                "stdio",
            ],
            None,
        ),
    ],
)
def test_each_flavour_gets_its_argv_and_sets_its_mode_before_the_first_prompt(room, flavor, argv, mode):
    turn_id = send(room, f"agent:{flavor}", "hello")["turns"][0]["turnId"]
    wait_terminal(room, turn_id)

    start = wire(room, flavor, kind="start")[0]
    assert start["argv"] == argv and start["exe"].endswith(f"bin/{flavor}")
    methods = [m for m in (r["msg"].get("method") for r in wire(room, flavor, kind="in")) if m]
    assert "initialized" not in methods
    if mode:
        assert methods[:4] == ["initialize", "session/new", "session/set_mode", "session/prompt"]
        set_mode = next(r["msg"] for r in wire(room, flavor, kind="in") if r["msg"].get("method") == "session/set_mode")
        assert set_mode["params"]["modeId"] == mode
    else:
        assert methods[:3] == ["initialize", "session/new", "session/prompt"]


def test_a_turn_cut_off_by_a_graceful_stop_keeps_its_partial_text_and_is_interrupted(room):
    with SseClient(room.base_url) as stream:
        turn_id = send(room, "agent:kimi", "[[fake: hang]]")["turns"][0]["turnId"]
        stream.wait_for(lambda e: e["type"] == "turn.content.delta" and e["body"]["turnId"] == turn_id)

    room.stop()
    room.start()

    terminal = wait_terminal(room, turn_id)
    assert terminal["type"] == "turn.interrupted"
    partial = db_rows(room, "SELECT partial_text FROM turns_turn WHERE turn_id = ?", turn_id)[0]["partial_text"]
    assert partial  # the hang's first delta survived the stop
    assert not any(e["type"] == "message.created" and e["body"].get("turnId") == turn_id for e in room.events())

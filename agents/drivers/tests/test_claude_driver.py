"""ClaudeDriver against the fake Claude Code (agents/fakes/fake_claude.py via bin/claude).

Assertions are about GroupX's own messages, read back from the fake's wire log.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import stat
import uuid

import pytest

from agents.drivers.base import (
    ADAPTER_START_FAILED,
    NATIVE_POLICY_BLOCKED,
    PROTOCOL_HANDSHAKE_TIMEOUT,
    PROTOCOL_INVALID_MESSAGE,
    SESSION_NOT_AVAILABLE,
    TURN_CANCEL_TIMEOUT,
    TURN_INTERRUPTED,
    UNEXPECTED_NATIVE_INTERACTION,
    ContentDelta,
    DriverError,
    ReasoningDelta,
    Timeouts,
    ToolProgress,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
)
from agents.drivers.claude import CLAUDE_ARGV, ClaudeDriver

from ._rig import MCP, collect, run_turn, texts
from .helpers import read_log, script
from .native_rig import NativeRig, mcp_endpoint

# A scripted Claude CLI for races the fake cannot stage. It answers the two handshake requests,
# then runs a JSON plan: {"read": n} reads n frames, {"ack": true} acknowledges the last control
# request read, {"quiet": s} logs {"early": bool} (did anything arrive within s seconds?),
# {"send": frame} writes a frame ("$sid" and "$cwd" filled in). Every frame read is logged.
SCRIPTED_CLI = r"""
import json, os, select, sys
plan, log, argv = json.loads(sys.argv[1]), open(sys.argv[2], "a"), sys.argv[3:]
sid, buf, last = argv[argv.index("--session-id") + 1], b"", {}

def send(obj):
    text = json.dumps(obj).replace('"$sid"', json.dumps(sid)).replace('"$cwd"', json.dumps(os.getcwd()))
    sys.stdout.write(text + "\n")
    sys.stdout.flush()

def read():
    global buf, last
    while b"\n" not in buf:
        chunk = os.read(0, 65536)
        if not chunk:
            sys.exit(0)
        buf += chunk
    line, buf = buf.split(b"\n", 1)
    log.write(line.decode() + "\n")
    log.flush()
    last = json.loads(line)

def ack():  # the interrupt acknowledgement has no body, as on the real CLI
    request, body = last["request"], {}
    if request["subtype"] != "interrupt":
        body = {"response": {"mode": request["mode"]} if "mode" in request else {"pid": os.getpid()}}
    send({"type": "control_response", "response": {"subtype": "success", "request_id": last["request_id"], **body}})

for _ in range(2):
    read()
    ack()
for step in plan:
    if "read" in step:
        for _ in range(step["read"]):
            read()
    elif "ack" in step:
        ack()
    elif "quiet" in step:
        early = bool(buf) or bool(select.select([0], [], [], step["quiet"])[0])
        log.write(json.dumps({"early": early}) + "\n")
        log.flush()
    elif "send" in step:
        send(step["send"])
for line in sys.stdin:
    pass
"""
INIT = {
    "type": "system",
    "subtype": "init",
    "session_id": "$sid",
    "cwd": "$cwd",
    "permissionMode": "bypassPermissions",
    "mcp_servers": [],
}
ABORTED = {
    "type": "result",
    "subtype": "error_during_execution",
    "is_error": True,
    "terminal_reason": "aborted_streaming",
    "session_id": "$sid",
}


def delta(text: str, message_id: str = "msg_1") -> list[dict]:
    return [
        {
            "send": {
                "type": "stream_event",
                "session_id": "$sid",
                "parent_tool_use_id": None,
                "event": {"type": "message_start", "message": {"id": message_id, "content": []}},
            }
        },
        {
            "send": {
                "type": "stream_event",
                "session_id": "$sid",
                "parent_tool_use_id": None,
                "event": {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
            }
        },
    ]


def success(text: str) -> dict:
    return {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "terminal_reason": "completed",
        "stop_reason": "end_turn",
        "result": text,
        "session_id": "$sid",
    }


async def scripted(rig: NativeRig, tmp_path, plan: list[dict]) -> tuple[object, object]:
    wire = tmp_path / "scripted.jsonl"
    command = (*script(tmp_path, SCRIPTED_CLI), json.dumps(plan), str(wire))
    session = await ClaudeDriver().start(dataclasses.replace(rig.profile(mcp=None), command=command))
    rig.sessions.append(session)
    return session, wire


@pytest.fixture
async def rig(tmp_path):
    rig = NativeRig(tmp_path, "claude")
    yield rig
    await rig.close_all()


def controls(rig: NativeRig, session=None) -> list[str]:
    return [m["request"]["subtype"] for m in rig.inbound(session) if m.get("type") == "control_request"]


def outbound(rig: NativeRig, session) -> list[dict]:
    return [r["msg"] for r in rig.records(session, kind="out") if "msg" in r]


# ---- start ----------------------------------------------------------------------------------


async def test_it_launches_with_the_fixed_argv_mcp_config_and_a_fresh_session_id(rig):
    session = await rig.start()
    (start,) = rig.records(session, kind="start")
    argv = start["argv"]
    assert argv[:9] == list(CLAUDE_ARGV)
    assert argv[9] == "--mcp-config"
    with open(argv[10]) as config:  # a file path: the binding is never on the command line (D39)
        assert json.load(config) == {
            "mcpServers": {"groupx": {"type": "http", "url": MCP.url, "headers": {"X-GroupX-Binding": MCP.binding_id}}}
        }
    assert MCP.binding_id not in " ".join(argv)
    assert argv[11:] == ["--session-id", session.native_session_id]
    assert uuid.UUID(session.native_session_id).version == 4
    assert start["cwd"] == str(rig.cwd)
    assert controls(rig, session) == ["initialize", "set_permission_mode"]
    initialize, set_mode = rig.inbound(session)
    assert initialize == {
        "type": "control_request",
        "request_id": "groupx-initialize-1",
        "request": {"subtype": "initialize", "hooks": None},
    }
    assert set_mode["request"] == {"subtype": "set_permission_mode", "mode": "bypassPermissions"}
    assert rig.check_ok(session, "set_mode")
    assert session.alive and not session.resumed and session.initial_permission_mode == "bypassPermissions"


async def test_the_mcp_config_file_is_private_to_the_user_and_goes_when_the_session_closes(rig, tmp_path):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    session = await rig.start(private_dir=str(private))
    (start,) = rig.records(session, kind="start")
    path = start["argv"][10]
    assert os.path.dirname(os.path.dirname(path)) == str(private)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700

    await session.close()

    assert os.listdir(private) == []


async def test_a_start_that_fails_leaves_no_mcp_config_file_behind(rig, tmp_path):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    error = await rig.start_fails({"exit_before_handshake": {"code": 9, "stderr": "boom"}}, private_dir=str(private))
    assert error.code == ADAPTER_START_FAILED
    assert os.listdir(private) == []


async def test_without_mcp_there_is_no_mcp_config_argument(rig):
    session = await rig.start(mcp=None)
    (start,) = rig.records(session, kind="start")
    assert start["argv"][9:] == ["--session-id", session.native_session_id]


async def test_an_initialize_without_current_permission_mode_is_accepted(rig):
    session = await rig.start({"omit_current_permission_mode": True})  # optional, as 2.1.197 omits it
    assert session.alive and session.initial_permission_mode is None


@pytest.mark.parametrize(
    "scenario",
    [{"set_mode_result": "default"}, {"set_mode_error": {"error": "disabled by policy", "error_code": "denied"}}],
)
async def test_a_refused_or_downgraded_permission_mode_is_policy_blocked(rig, scenario):
    error = await rig.start_fails(scenario)
    assert error.code == NATIVE_POLICY_BLOCKED and not error.retryable


async def test_an_initialize_error_fails_the_start(rig):
    error = await rig.start_fails({"initialize_error": "nope"})
    assert error.code == ADAPTER_START_FAILED and "nope" in error.message


@pytest.mark.parametrize("scenario", [{"no_handshake_reply": True}, {"set_mode_hang": True}])
async def test_an_unanswered_control_request_is_a_handshake_timeout(rig, scenario):
    error = await rig.start_fails(scenario, timeouts=Timeouts(handshake_ms=300, close_ms=500))
    assert error.code == PROTOCOL_HANDSHAKE_TIMEOUT


async def test_a_crash_before_the_handshake_fails_the_start_with_its_stderr(rig):
    error = await rig.start_fails({"exit_before_handshake": {"code": 9, "stderr": "boom"}})
    assert error.code == ADAPTER_START_FAILED
    assert "boom" in error.message and "9" in error.message


@pytest.mark.skipif(os.geteuid() != 0, reason="Claude Code's root rule only applies to root")
async def test_the_root_refusal_is_policy_blocked_with_a_hint_and_is_sandbox_is_never_set(rig):
    error = await rig.start_fails({"root_check": True}, env={"IS_SANDBOX": "0"})
    assert error.code == NATIVE_POLICY_BLOCKED and not error.retryable
    assert "IS_SANDBOX=1" in error.message
    (start,) = rig.records(kind="start")
    assert start["env"]["IS_SANDBOX"] == "0"
    session = await rig.start({"root_check": True}, env={"IS_SANDBOX": "1"})  # the operator's choice
    assert session.alive


# ---- turns ----------------------------------------------------------------------------------


async def test_a_text_turn_streams_deltas_once_and_completes_with_the_result_text(rig):
    session = await rig.start()
    turn, events = await run_turn(session, "[[fake: stream n=3]]")
    assert turn.native_turn_id == turn.turn_id  # Claude has no native turn ids (X2)
    assert events == [
        TurnStarted(native_turn_id=turn.turn_id),
        ContentDelta("part-1 "),
        ContentDelta("part-2 "),
        ContentDelta("part-3 "),
        TurnCompleted(content="part-1 part-2 part-3 ", stop_reason="end_turn"),
    ]
    prompt = rig.inbound(session)[-1]
    assert prompt == {
        "type": "user",
        "message": {"role": "user", "content": [{"type": "text", "text": "[[fake: stream n=3]]"}]},
        "parent_tool_use_id": None,
        "session_id": session.native_session_id,
    }
    assert session.mcp_verified and session.mcp_status == "connected"  # from system/init


async def test_a_turn_reports_thinking_and_tool_progress_without_inputs_or_outputs(rig):
    session = await rig.start()
    _, events = await run_turn(session, "[[fake: reason n=2; tool; mcp-publish text=hi; reply text=done]]")
    assert texts(events, ReasoningDelta) == ["thinking-1 ", "thinking-2 "]
    tools = [e for e in events if isinstance(e, ToolProgress)]
    assert [(t.phase, t.details["name"]) for t in tools] == [
        ("tool.started", "Bash"),
        ("tool.completed", "Bash"),
        ("tool.started", "mcp__groupx__publish"),
        ("tool.completed", "mcp__groupx__publish"),
    ]
    assert tools[0].tool_call_id == tools[1].tool_call_id
    assert tools[2].details == {
        "name": "mcp__groupx__publish",
        "status": "running",
        "kind": "mcp",
        "server": "groupx",
        "tool": "publish",
    }
    assert "echo fake-tool" not in repr(tools)
    assert events[-1].content.endswith("done")


async def test_final_text_without_stream_events_is_emitted_once_from_the_assistant_frame(rig):
    session = await rig.start()
    _, events = await run_turn(session, "[[fake: fallback_only text=whole]]")
    assert texts(events, ContentDelta) == ["whole"]
    assert events[-1] == TurnCompleted(content="whole", stop_reason="end_turn")


async def test_noise_foreign_sessions_and_duplicate_results_are_ignored(rig):
    session = await rig.start({"noise": True})
    _, events = await run_turn(session, "[[fake: noise; foreign; dup_terminal; reply text=done]]")
    assert events[1:] == [ContentDelta("done"), TurnCompleted(content="done", stop_reason="end_turn")]
    _, events = await run_turn(session, "[[fake: reply text=next]]")
    assert events[1:] == [ContentDelta("next"), TurnCompleted(content="next", stop_reason="end_turn")]


async def test_frames_up_to_eight_mebibytes_are_accepted(rig):
    session = await rig.start()
    _, events = await run_turn(session, "[[fake: garbage kind=huge_line size_mb=2 then=continue; reply text=big]]")
    assert events[-1] == TurnCompleted(content="big", stop_reason="end_turn")


async def test_an_api_error_result_fails_the_turn_and_keeps_the_session(rig):
    session = await rig.start()
    _, events = await run_turn(session, "[[fake: fail message=overloaded]]")
    assert events[-1].error_code == TURN_INTERRUPTED
    assert "overloaded" in events[-1].message and "529" in events[-1].message
    assert not session.needs_rebuild
    _, events = await run_turn(session, "next")
    assert isinstance(events[-1], TurnCompleted)


async def test_not_logged_in_is_a_failed_turn_although_the_subtype_says_success(rig):
    session = await rig.start({"not_logged_in": True})
    _, events = await run_turn(session, "hello")
    assert events[-1].error_code == TURN_INTERRUPTED
    assert "Not logged in" in events[-1].message


async def test_a_second_turn_while_one_is_active_is_refused(rig):
    session = await rig.start()
    turn = await session.start_turn("t1", "[[fake: hang]]")
    with pytest.raises(DriverError) as caught:
        await session.start_turn("t2", "hello")
    assert caught.value.code == SESSION_NOT_AVAILABLE
    await collect(turn, until=ContentDelta)
    await turn.cancel()
    assert (await collect(turn))[-1] == TurnCancelled()


async def test_a_prompt_that_cannot_be_encoded_is_refused_without_writing_anything(rig):
    session = await rig.start()
    with pytest.raises(DriverError) as caught:
        await session.start_turn("t1", "bad \ud800 surrogate")
    assert caught.value.code == PROTOCOL_INVALID_MESSAGE
    assert session.alive and not rig.records(session, kind="in_bad")
    _, events = await run_turn(session, "fine")
    assert isinstance(events[-1], TurnCompleted)


@pytest.mark.parametrize("reachable", [True, False])
async def test_the_mcp_status_in_system_init_decides_whether_mcp_is_verified(rig, reachable):
    with mcp_endpoint() as (mcp, bindings):
        session = await rig.start({"mcp_probe_on_start": True}, mcp=mcp if reachable else MCP)
        await rig.wait_record(session, lambda r: r.get("k") == "mcp_probe", "the fake's MCP probe")
        await run_turn(session, "hello")
    assert session.mcp_verified is reachable
    assert session.mcp_status == ("connected" if reachable else "failed")
    assert set(bindings) == ({MCP.binding_id} if reachable else set())


# ---- init frame verification ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("variant", "code"),
    [
        ("wrong_session", SESSION_NOT_AVAILABLE),
        ("wrong_cwd", SESSION_NOT_AVAILABLE),
        ("malformed", PROTOCOL_INVALID_MESSAGE),
        ("downgraded_mode", NATIVE_POLICY_BLOCKED),
    ],
)
async def test_a_system_init_that_does_not_match_fails_the_turn_and_needs_a_rebuild(rig, variant, code):
    session = await rig.start({"init_frame": variant})
    _, events = await run_turn(session, "hello")
    assert [type(e) for e in events] == [TurnStarted, TurnFailed]
    assert events[-1].error_code == code
    assert session.needs_rebuild


async def test_a_missing_system_init_does_not_block_the_turn(rig):
    session = await rig.start({"init_frame": "missing"})
    _, events = await run_turn(session, "[[fake: reply text=ok]]")
    assert events[-1] == TurnCompleted(content="ok", stop_reason="end_turn")


# ---- cancel ---------------------------------------------------------------------------------


@pytest.mark.parametrize("during", ["stream", "tool"])
async def test_cancel_sends_one_interrupt_and_the_next_turn_works(rig, during):
    session = await rig.start()
    turn = await session.start_turn("t1", f"[[fake: hang cancel_during={during}]]")
    first = await collect(turn, until=ContentDelta if during == "stream" else ToolProgress)
    await turn.cancel()
    await turn.cancel()
    events = first + await collect(turn)
    assert events[-1] == TurnCancelled()
    assert len(texts(events, ContentDelta)) == (1 if during == "stream" else 0)  # the partial frame adds none
    assert controls(rig, session).count("interrupt") == 1
    results = [m for m in outbound(rig, session) if m.get("type") == "result"]
    assert results[-1]["terminal_reason"] == ("aborted_streaming" if during == "stream" else "aborted_tools")
    _, events = await run_turn(session, "again")
    assert "".join(texts(events, ContentDelta)) == "echo: again"
    assert isinstance(events[-1], TurnCompleted) and not session.needs_rebuild


async def test_a_cancel_claude_never_confirms_times_out_and_needs_a_rebuild(rig):
    session = await rig.start(timeouts=Timeouts(cancel_ms=300, close_ms=500))
    turn = await session.start_turn("t1", "[[fake: hang ignore_cancel=1]]")
    await collect(turn, until=ContentDelta)
    await turn.cancel()
    events = await collect(turn)
    assert events[-1].error_code == TURN_CANCEL_TIMEOUT
    assert session.needs_rebuild


async def test_a_late_result_after_an_interrupt_does_not_end_the_next_turn(rig):
    session = await rig.start({"complete_on_interrupt": True})
    turn = await session.start_turn("t1", "[[fake: hang]]")
    await collect(turn, until=ContentDelta)
    await turn.cancel()
    assert isinstance((await collect(turn))[-1], TurnCompleted)  # it settled before the interrupt landed
    _, events = await run_turn(session, "[[fake: stream n=2 delay_ms=50]]")
    assert events[1:] == [
        ContentDelta("part-1 "),
        ContentDelta("part-2 "),
        TurnCompleted(content="part-1 part-2 ", stop_reason="end_turn"),
    ]
    reasons = [m.get("terminal_reason") for m in outbound(rig, session) if m.get("type") == "result"]
    assert reasons == ["completed", "aborted_streaming", "completed"]  # the stray really was sent
    _, events = await run_turn(session, "third")
    assert isinstance(events[-1], TurnCompleted)


async def test_a_cancel_before_the_cli_began_the_prompt_is_sent_once_it_has(rig, tmp_path):
    session, wire = await scripted(
        rig, tmp_path, [{"read": 1}, {"quiet": 0.5}, {"send": INIT}, {"read": 1}, {"ack": True}, {"send": ABORTED}]
    )
    turn = await session.start_turn("t1", "slow to begin")
    await turn.cancel()  # the CLI has not begun the prompt yet
    assert (await collect(turn))[-1] == TurnCancelled()
    lines = read_log(wire)
    assert lines[3] == {"early": False}
    assert lines[4]["request"] == {"subtype": "interrupt"}


async def test_a_stray_result_landing_inside_the_next_turn_is_absorbed(rig, tmp_path):
    session, _ = await scripted(
        rig,
        tmp_path,
        [
            {"read": 1},
            {"send": INIT},
            *delta("one "),
            {"read": 1},
            {"ack": True},
            {"send": success("one ")},  # the turn settled just before the interrupt landed
            {"read": 1},
            {"send": INIT},
            *delta("two ", "msg_2"),
            {"send": ABORTED},  # the interrupt's own result, late
            {"send": success("two ")},
        ],
    )
    turn = await session.start_turn("t1", "first")
    await collect(turn, until=ContentDelta)
    await turn.cancel()
    assert (await collect(turn))[-1] == TurnCompleted(content="one ", stop_reason="end_turn")
    _, events = await run_turn(session, "second")
    assert events[1:] == [ContentDelta("two "), TurnCompleted(content="two ", stop_reason="end_turn")]


# ---- native interactions --------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["can_use_tool", "elicitation", "request_user_dialog"])
async def test_a_permission_request_is_denied_fails_only_its_turn_and_the_next_turn_works(rig, kind):
    session = await rig.start()
    _, events = await run_turn(session, f"[[fake: reply text=before; ask kind={kind}]]")
    failures = [e for e in events if isinstance(e, TurnFailed)]
    assert len(failures) == 1 and events[-1] is failures[0]
    assert failures[0].error_code == UNEXPECTED_NATIVE_INTERACTION
    inbound = rig.inbound(session)
    reply_at = next(i for i, m in enumerate(inbound) if m.get("type") == "control_response")
    assert inbound[reply_at]["response"]["subtype"] == "success"
    assert inbound[reply_at]["response"]["response"]["behavior"] == "deny"
    assert inbound[reply_at + 1]["request"] == {"subtype": "interrupt"}
    assert rig.check_ok(session, "interaction_reply") and rig.check_ok(session, "cancel_after_interaction")
    assert not session.needs_rebuild and session.alive  # the failure is the turn's only
    _, events = await run_turn(session, "next one")
    assert "".join(texts(events, ContentDelta)) == "echo: next one"
    assert isinstance(events[-1], TurnCompleted)


@pytest.mark.parametrize("kind", ["hook_callback", "mcp_message", "oauth_token_refresh"])
async def test_other_control_requests_get_an_error_and_the_turn_carries_on(rig, kind):
    session = await rig.start()
    _, events = await run_turn(session, f"[[fake: ask kind={kind}; reply text=after]]")
    assert events[-1] == TurnCompleted(content="after", stop_reason="end_turn")
    reply = next(m for m in rig.inbound(session) if m.get("type") == "control_response")
    assert reply["response"]["subtype"] == "error"
    assert rig.check_ok(session, "interaction_reply")


# ---- crashes and garbage --------------------------------------------------------------------


async def test_a_crash_mid_turn_fails_the_turn_as_invalid_message_and_needs_a_rebuild(rig):
    session = await rig.start()
    _, events = await run_turn(session, "[[fake: crash code=7 after=delta]]")
    assert events[1] == ContentDelta("partial ")
    assert events[-1].error_code == PROTOCOL_INVALID_MESSAGE and "exit code 7" in events[-1].message
    assert session.needs_rebuild and not session.alive
    with pytest.raises(DriverError) as caught:
        await session.start_turn("t2", "hello")
    assert caught.value.code == SESSION_NOT_AVAILABLE


@pytest.mark.parametrize("kind", ["not_json", "invalid_utf8", "partial_line", "non_object", "huge_line"])
async def test_garbage_mid_turn_fails_the_turn_as_invalid_message_and_needs_a_rebuild(rig, kind):
    session = await rig.start()
    _, events = await run_turn(session, f"[[fake: reply text=x; garbage kind={kind} size_mb=9]]")
    assert events[-1].error_code == PROTOCOL_INVALID_MESSAGE
    assert session.needs_rebuild


# ---- resume ---------------------------------------------------------------------------------


async def test_a_new_process_resumes_the_stored_session_with_resume(rig):
    first = await rig.start()
    await run_turn(first, "remember kiwi")
    session_id = first.native_session_id
    await first.close()

    second = await rig.start(resume=session_id)
    assert second.native_session_id == session_id and second.resumed
    (start,) = rig.records(second, kind="start")
    assert start["argv"][-2:] == ["--resume", session_id]
    assert controls(rig, second) == ["initialize", "set_permission_mode"]
    _, events = await run_turn(second, "[[fake: reply text=kiwi]]")
    assert events[-1] == TurnCompleted(content="kiwi", stop_reason="end_turn")  # the init frame matched


async def test_resuming_a_session_that_never_got_a_prompt_is_not_available(rig):
    first = await rig.start()
    session_id = first.native_session_id
    await first.close()
    error = await rig.start_fails(resume=session_id)
    assert error.code == SESSION_NOT_AVAILABLE  # L3/L11: the manager starts fresh


async def test_a_resume_id_that_is_not_a_uuid_is_not_available(rig):
    error = await rig.start_fails(resume="not-a-uuid")
    assert error.code == SESSION_NOT_AVAILABLE
    assert not rig.records(kind="start")  # nothing was launched


# ---- close ----------------------------------------------------------------------------------


async def test_closing_during_a_turn_interrupts_it_and_fails_the_turn_as_interrupted(rig):
    session = await rig.start()
    turn = await session.start_turn("t1", "[[fake: hang]]")
    await collect(turn, until=ContentDelta)
    await asyncio.gather(session.close(), session.close())
    events = await collect(turn)
    assert events[-1].error_code == TURN_INTERRUPTED
    assert controls(rig, session)[-1] == "interrupt"
    assert not session.alive

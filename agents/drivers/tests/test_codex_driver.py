"""CodexDriver against the fake ``codex app-server`` (agents/fakes/fake_codex.py via bin/codex).

Assertions are about GroupX's own messages, read back from the fake's wire log.
"""

from __future__ import annotations

import asyncio

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
from agents.drivers.claude import ClaudeDriver
from agents.drivers.codex import CODEX_ARGV, CodexDriver
from agents.drivers.registry import get_driver

from ._rig import MCP, collect, run_turn, texts
from .native_rig import NativeRig, mcp_endpoint

COMPLETED = TurnCompleted(content=None, stop_reason="completed")


@pytest.fixture
async def rig(tmp_path):
    rig = NativeRig(tmp_path, "codex")
    yield rig
    await rig.close_all()


def methods(rig: NativeRig, session=None) -> list[str]:
    return [m["method"] for m in rig.inbound(session) if "method" in m]


# ---- start ----------------------------------------------------------------------------------


async def test_it_launches_app_server_and_runs_the_handshake_in_order(rig):
    session = await rig.start()
    (start,) = rig.records(session, kind="start")
    assert start["argv"] == list(CODEX_ARGV)
    assert start["cwd"] == str(rig.cwd)
    assert methods(rig, session) == ["initialize", "initialized", "configRequirements/read", "thread/start"]
    initialize, initialized, _, thread_start = rig.inbound(session)
    assert initialize["id"] == "groupx-1" and "jsonrpc" not in initialize
    assert initialize["params"] == {
        "clientInfo": {"name": "groupx", "title": "GroupX", "version": "0.1.0"},
        "capabilities": {"experimentalApi": True},
    }
    assert initialized == {"method": "initialized"}
    assert thread_start["params"] == {
        "approvalPolicy": "never",
        "sandbox": "danger-full-access",
        "config": {"mcp_servers.groupx": {"url": MCP.url, "http_headers": {"X-GroupX-Binding": MCP.binding_id}}},
    }
    assert rig.check_ok(session, "thread_params") and rig.check_ok(session, "mcp_binding_present")
    assert session.native_session_id and session.alive and not session.resumed
    assert not rig.no_failed_checks(session)


async def test_without_mcp_the_thread_gets_no_config_override(rig):
    session = await rig.start(mcp=None)
    thread_start = rig.inbound(session)[-1]
    assert thread_start["params"] == {"approvalPolicy": "never", "sandbox": "danger-full-access"}
    assert not session.mcp_verified


async def test_a_policy_allowlist_without_never_blocks_the_start_before_thread_start(rig):
    error = await rig.start_fails({"requirements": "blocked"})
    assert error.code == NATIVE_POLICY_BLOCKED and not error.retryable
    assert "thread/start" not in methods(rig)


async def test_a_granular_allowlist_that_still_allows_never_starts(rig):
    session = await rig.start({"requirements": "granular_never"})
    assert session.alive


async def test_malformed_requirements_are_a_protocol_error(rig):
    error = await rig.start_fails({"requirements": "malformed"})
    assert error.code == PROTOCOL_INVALID_MESSAGE


async def test_a_thread_opened_in_another_cwd_fails_the_start(rig, tmp_path):
    error = await rig.start_fails({"thread_cwd": str(tmp_path)})
    assert error.code == ADAPTER_START_FAILED
    assert "cwd" in error.message


async def test_an_unanswered_initialize_is_a_handshake_timeout(rig):
    # 2 s, not 300 ms: the fake must have been scheduled to log the request it never answers
    # before the timeout kills it (CI on a loaded machine once saw an empty log at 300 ms).
    error = await rig.start_fails({"no_initialize_reply": True}, timeouts=Timeouts(handshake_ms=2000, close_ms=500))
    assert error.code == PROTOCOL_HANDSHAKE_TIMEOUT
    assert methods(rig) == ["initialize"]  # `initialized` only ever follows the initialize result


async def test_a_crash_before_the_handshake_fails_the_start_with_its_stderr(rig):
    error = await rig.start_fails({"exit_on_start": {"code": 9, "stderr": "boom"}})
    assert error.code == ADAPTER_START_FAILED
    assert "boom" in error.message and "9" in error.message


async def test_an_approval_request_during_thread_start_fails_the_start(rig):
    error = await rig.start_fails({"ask_during_start": "command"})
    assert error.code == UNEXPECTED_NATIVE_INTERACTION
    reply = next(m for m in rig.inbound() if "result" in m)
    assert reply["result"] == {"decision": "cancel"}


# ---- turns ----------------------------------------------------------------------------------


async def test_a_text_turn_streams_deltas_then_completes_with_the_native_turn_id(rig):
    session = await rig.start()
    turn, events = await run_turn(session, "say it [[fake: stream n=3]]")
    assert events == [
        TurnStarted(native_turn_id=turn.native_turn_id),
        ContentDelta("part-1 "),
        ContentDelta("part-2 "),
        ContentDelta("part-3 "),
        COMPLETED,
    ]
    turn_start = rig.inbound(session)[-1]
    assert turn_start["method"] == "turn/start"
    assert turn_start["params"] == {
        "threadId": session.native_session_id,
        "input": [{"type": "text", "text": "say it [[fake: stream n=3]]"}],
    }
    (record,) = rig.records(session, kind="turn")
    assert record["turnId"] == turn.native_turn_id


async def test_a_turn_reports_reasoning_and_bounded_tool_progress_in_order(rig):
    session = await rig.start()
    _, events = await run_turn(session, "[[fake: reason n=2; tool; stream n=2]]")
    assert texts(events, ReasoningDelta) == ["thinking-1 ", "thinking-2 "]
    started, completed = [e for e in events if isinstance(e, ToolProgress)]
    assert (started.phase, completed.phase) == ("tool.started", "tool.completed")
    assert started.tool_call_id == completed.tool_call_id
    assert completed.details == {
        "name": "shell",
        "status": "completed",
        "kind": "execute",
        "itemType": "commandExecution",
        "title": "/bin/bash -lc 'echo fake-tool'",
        "exitCode": 0,
    }
    assert "fake-tool\n" not in repr(completed.details)  # never the command's output
    assert [type(e) for e in events] == [
        TurnStarted,
        ReasoningDelta,
        ReasoningDelta,
        ToolProgress,
        ToolProgress,
        ContentDelta,
        ContentDelta,
        TurnCompleted,
    ]


async def test_final_text_without_deltas_is_emitted_once_from_the_completed_item(rig):
    session = await rig.start()
    _, events = await run_turn(session, "[[fake: fallback_only text=whole]]")
    assert texts(events, ContentDelta) == ["whole"]
    _, events = await run_turn(session, "[[fake: reply text=streamed]]")
    assert texts(events, ContentDelta) == ["streamed"]  # not again from item/completed


async def test_noise_foreign_threads_stale_and_duplicate_terminals_are_ignored(rig):
    session = await rig.start({"noise": True})
    await run_turn(session, "first")
    _, events = await run_turn(session, "[[fake: late_old; noise; foreign; dup_terminal; reply text=done]]")
    assert events[1:] == [ContentDelta("done"), COMPLETED]
    _, events = await run_turn(session, "[[fake: reply text=next]]")
    assert events[1:] == [ContentDelta("next"), COMPLETED]


async def test_a_terminal_turn_start_response_completes_the_turn(rig):
    session = await rig.start({"terminal_in_response": True})
    turn, events = await run_turn(session, "quick")
    assert events == [TurnStarted(native_turn_id=turn.native_turn_id), COMPLETED]
    _, events = await run_turn(session, "again")
    assert events[-1] == COMPLETED


async def test_a_retrying_error_notice_does_not_fail_the_turn(rig):
    session = await rig.start()
    _, events = await run_turn(session, "[[fake: error_notice will_retry=1; echo]]")
    assert events[-1] == COMPLETED
    assert "".join(texts(events, ContentDelta)) == "echo: "


async def test_a_final_error_notice_is_the_reason_of_the_failed_terminal(rig):
    session = await rig.start()
    _, events = await run_turn(session, "[[fake: error_notice will_retry=0 message=overloaded; reply text=x]]")
    assert events[-1] == COMPLETED  # still only turn/completed ends a turn
    _, events = await run_turn(session, "[[fake: fail message=quota notice=1]]")
    assert events[-1] == TurnFailed(TURN_INTERRUPTED, "quota")
    assert not session.needs_rebuild  # a failed turn leaves the thread usable
    _, events = await run_turn(session, "next")
    assert events[-1] == COMPLETED


async def test_a_second_turn_while_one_is_active_is_refused(rig):
    session = await rig.start()
    turn = await session.start_turn("t1", "[[fake: hang]]")
    with pytest.raises(DriverError) as caught:
        await session.start_turn("t2", "hello")
    assert caught.value.code == SESSION_NOT_AVAILABLE
    await turn.cancel()
    assert isinstance((await collect(turn))[-1], TurnCancelled)


# ---- cancel ---------------------------------------------------------------------------------


async def test_cancel_mid_stream_sends_one_interrupt_and_the_next_turn_works(rig):
    session = await rig.start()
    turn = await session.start_turn("t1", "[[fake: hang]]")
    first = await collect(turn, until=ContentDelta)
    await turn.cancel()
    await turn.cancel()  # once per turn, however often asked
    events = first + await collect(turn)
    assert events[-1] == TurnCancelled()
    interrupts = [m for m in rig.inbound(session) if m.get("method") == "turn/interrupt"]
    assert [m["params"] for m in interrupts] == [{"threadId": session.native_session_id, "turnId": turn.native_turn_id}]
    assert rig.check_ok(session, "interrupt_turn_id")
    _, events = await run_turn(session, "again")
    assert events[-1] == COMPLETED and not session.needs_rebuild


async def test_a_cancel_before_the_turn_id_is_known_is_sent_once_it_is(rig):
    session = await rig.start()
    turn = await session.start_turn("t1", "[[fake: hang emit_first=0]]")
    assert turn.native_turn_id is None  # turn/start has not been answered yet
    await turn.cancel()
    assert (await collect(turn))[-1] == TurnCancelled()
    interrupt = next(m for m in rig.inbound(session) if m.get("method") == "turn/interrupt")
    assert interrupt["params"]["turnId"] == turn.native_turn_id


async def test_a_cancel_codex_never_confirms_times_out_and_needs_a_rebuild(rig):
    session = await rig.start(timeouts=Timeouts(cancel_ms=300, close_ms=500))
    turn = await session.start_turn("t1", "[[fake: hang ignore_cancel=1]]")
    await collect(turn, until=ContentDelta)
    await turn.cancel()
    events = await collect(turn)
    assert events[-1].error_code == TURN_CANCEL_TIMEOUT
    assert session.needs_rebuild


# ---- native interactions --------------------------------------------------------------------

INTERACTIONS = {
    "command": {"decision": "cancel"},
    "network": {"decision": "cancel"},
    "file": {"decision": "cancel"},
    "permissions": {"permissions": {}},
    "user_input": {"answers": {}},
    "user_input_legacy": {"answers": {}},
    "elicitation": {"action": "cancel", "content": None},
}


@pytest.mark.parametrize("kind", [*INTERACTIONS, "unknown"])
async def test_a_native_interaction_fails_only_its_turn_and_the_next_turn_works(rig, kind):
    session = await rig.start()
    turn, events = await run_turn(session, f"[[fake: reply text=before; ask kind={kind}]]")
    failures = [e for e in events if isinstance(e, TurnFailed)]
    assert len(failures) == 1 and events[-1] is failures[0]
    assert failures[0].error_code == UNEXPECTED_NATIVE_INTERACTION
    inbound = rig.inbound(session)
    reply = next(m for m in inbound if "method" not in m)
    if kind == "unknown":
        assert reply["error"]["code"] == -32601
    else:
        assert reply["result"] == INTERACTIONS[kind]
    interrupts = [m for m in inbound if m.get("method") == "turn/interrupt"]
    assert [m["params"]["turnId"] for m in interrupts] == [turn.native_turn_id]
    assert rig.check_ok(session, "interaction_reply")
    assert rig.check_ok(session, "cancel_after_interaction")
    assert not session.needs_rebuild and session.alive  # the failure is the turn's only
    _, events = await run_turn(session, "next one")
    assert events[-1] == COMPLETED
    assert "".join(texts(events, ContentDelta)) == "echo: next one"


async def test_an_interaction_whose_interrupt_never_settles_needs_a_rebuild(rig):
    session = await rig.start(timeouts=Timeouts(cancel_ms=300, close_ms=500))
    _, events = await run_turn(session, "[[fake: ask kind=command cancel_delay_ms=5000]]")
    assert events[-1].error_code == UNEXPECTED_NATIVE_INTERACTION
    assert len([e for e in events if isinstance(e, TurnFailed)]) == 1
    assert session.needs_rebuild


# ---- crashes and garbage --------------------------------------------------------------------


async def test_a_crash_mid_turn_fails_the_turn_as_invalid_message_and_needs_a_rebuild(rig):
    session = await rig.start()
    _, events = await run_turn(session, "[[fake: crash code=7 after=delta]]")
    assert events[1] == ContentDelta("partial ")
    assert events[-1].error_code == PROTOCOL_INVALID_MESSAGE
    assert "exit code 7" in events[-1].message
    assert session.needs_rebuild and not session.alive
    with pytest.raises(DriverError) as caught:
        await session.start_turn("t2", "hello")
    assert caught.value.code == SESSION_NOT_AVAILABLE


@pytest.mark.parametrize(
    "kind",
    [
        "not_json",
        "invalid_utf8",
        "partial_line",
        "huge_line",
        "non_object",
        "wrong_jsonrpc",
        "response_without_id",
        "bad_request_id",
        # An answer to an id never sent (D23 on the spec's "only logged").
        "orphan_response",
    ],
)
async def test_garbage_mid_turn_fails_the_turn_as_invalid_message_and_needs_a_rebuild(rig, kind):
    session = await rig.start()
    _, events = await run_turn(session, f"[[fake: reply text=x; garbage kind={kind}]]")
    assert isinstance(events[-1], TurnFailed)
    assert events[-1].error_code == PROTOCOL_INVALID_MESSAGE
    assert session.needs_rebuild


@pytest.mark.parametrize("kind", ["blank_and_crlf"])
async def test_tolerated_garbage_does_not_disturb_the_turn(rig, kind):
    session = await rig.start()
    _, events = await run_turn(session, f"[[fake: garbage kind={kind}; reply text=fine]]")
    assert events[1:] == [ContentDelta("fine"), COMPLETED]
    assert not session.needs_rebuild


# ---- resume ---------------------------------------------------------------------------------


async def test_a_new_process_resumes_the_stored_thread_with_thread_resume(rig):
    first = await rig.start()
    await run_turn(first, "remember kiwi")
    thread_id = first.native_session_id
    await first.close()

    second = await rig.start(resume=thread_id)
    assert second.native_session_id == thread_id and second.resumed
    assert methods(rig, second) == [
        "initialize",
        "initialized",
        "configRequirements/read",
        "thread/resume",
        "thread/turns/list",
    ]
    resume, page = rig.inbound(second)[-2:]
    # Without its turns: the whole history in one line would pass the 1 MiB line limit one day.
    assert resume["params"] == {
        "threadId": thread_id,
        "excludeTurns": True,
        "approvalPolicy": "never",
        "sandbox": "danger-full-access",
        "config": {"mcp_servers.groupx": {"url": MCP.url, "http_headers": {"X-GroupX-Binding": MCP.binding_id}}},
    }
    assert page["params"] == {"threadId": thread_id, "limit": 1, "sortDirection": "desc", "itemsView": "notLoaded"}
    _, events = await run_turn(second, "what was it?")
    assert events[-1] == COMPLETED


async def test_resuming_a_thread_that_never_ran_a_turn_is_not_available(rig):
    first = await rig.start()
    thread_id = first.native_session_id
    await first.close()
    error = await rig.start_fails(resume=thread_id)
    assert error.code == SESSION_NOT_AVAILABLE  # C2: "no rollout found"; the manager starts fresh
    assert "no rollout found" in error.message


# ---- MCP status -----------------------------------------------------------------------------


async def test_a_groupx_mcp_server_that_fails_to_start_is_recorded(rig):
    session = await rig.start({"mcp_probe_on_start": True})  # nothing listens on MCP.url
    await rig.wait_record(session, lambda r: r.get("k") == "mcp_probe", "the fake's MCP probe")
    await run_turn(session, "hello")  # the status notification is read by then
    assert session.mcp_status == "failed" and not session.mcp_verified
    assert "groupx" in session.mcp_error


async def test_a_groupx_mcp_server_that_answers_verifies_the_session(rig):
    with mcp_endpoint() as (mcp, bindings):
        session = await rig.start({"mcp_probe_on_start": True}, mcp=mcp)
        await rig.wait_record(session, lambda r: r.get("k") == "mcp_probe", "the fake's MCP probe")
        await run_turn(session, "hello")  # the status notification is read by then
    assert session.mcp_status == "ready" and session.mcp_verified
    assert bindings and set(bindings) == {MCP.binding_id}


# ---- close and registry ---------------------------------------------------------------------


async def test_closing_during_a_turn_interrupts_it_and_fails_the_turn_as_interrupted(rig):
    session = await rig.start()
    turn = await session.start_turn("t1", "[[fake: hang]]")
    await collect(turn, until=ContentDelta)
    await asyncio.gather(session.close(), session.close())
    events = await collect(turn)
    assert events[-1].error_code == TURN_INTERRUPTED
    assert methods(rig, session)[-1] == "turn/interrupt"
    assert not session.alive and session.process.returncode == 0


def test_the_registry_gives_the_codex_and_claude_drivers():
    assert isinstance(get_driver("codex"), CodexDriver) and get_driver("codex").name == "codex"
    assert isinstance(get_driver("claude"), ClaudeDriver) and get_driver("claude").name == "claude"

"""AcpDriver against the fake ACP CLI (agents/fakes/fake_acp.py through its bin/ shims).

Assertions are about GroupX's own messages, read back from the fake's wire log.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from agents.drivers.acp import FLAVOR_ARGV, AcpDriver
from agents.drivers.acp_policy import has_policy_evidence
from agents.drivers.base import (
    ADAPTER_START_FAILED,
    NATIVE_POLICY_BLOCKED,
    NATIVE_RESUME_UNSUPPORTED,
    PROTOCOL_HANDSHAKE_TIMEOUT,
    PROTOCOL_INVALID_MESSAGE,
    SESSION_NOT_AVAILABLE,
    TURN_CANCEL_TIMEOUT,
    TURN_INTERRUPTED,
    UNEXPECTED_NATIVE_INTERACTION,
    ContentDelta,
    DriverError,
    LaunchProfile,
    ReasoningDelta,
    Timeouts,
    ToolProgress,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
)
from agents.drivers.registry import ADAPTER_NOT_FOUND, get_driver

from ._rig import MCP, collect, run_turn
from .acp_rig import Rig, rest_of
from .helpers import eventually, pid_gone


@pytest.fixture
async def rig(tmp_path):
    rig = Rig(tmp_path)
    yield rig
    await asyncio.gather(*(session.close() for session in rig.sessions))


# ---- start ----------------------------------------------------------------------------------


@pytest.mark.parametrize("flavor", ["grok", "kimi", "hermes", "generic"])
async def test_each_flavour_launches_with_its_argv_and_sets_its_mode_before_the_first_prompt(rig, flavor):
    session = await rig.start(flavor)
    _, events = await run_turn(session, "hello")
    assert isinstance(events[-1], TurnCompleted)

    (start,) = rig.records(session, kind="start")
    assert start["argv"] == list(FLAVOR_ARGV[flavor])
    assert start["cwd"] == str(rig.cwd)
    expected = ["initialize", "session/new", "session/set_mode", "session/prompt"]
    if flavor in ("grok", "generic"):
        expected.remove("session/set_mode")
    assert rig.methods(session) == expected  # and never an `initialized` notification
    initialize, new = rig.inbound(session)[:2]
    assert initialize["id"] == f"{flavor}:1"
    assert initialize["params"] == {
        "protocolVersion": 1,
        "clientCapabilities": {},
        "clientInfo": {"name": "groupx", "title": "GroupX", "version": "0.1.0"},
    }
    assert new["params"] == {
        "cwd": str(rig.cwd),
        "mcpServers": [
            {
                "type": "http",
                "name": "groupx",
                "url": MCP.url,
                "headers": [{"name": "X-GroupX-Binding", "value": MCP.binding_id}],
            }
        ],
    }
    if flavor in ("kimi", "hermes"):
        set_mode = rig.inbound(session)[2]
        assert set_mode["params"] == {
            "sessionId": session.native_session_id,
            "modeId": {"kimi": "auto", "hermes": "dont_ask"}[flavor],
        }
        assert rig.check_ok(session, "set_mode")
    assert session.mcp_verified and not session.resumed and session.alive


async def test_without_mcp_the_session_gets_no_servers_and_is_not_mcp_verified(rig):
    session = await rig.start("kimi", mcp=None)
    new = rig.inbound(session)[1]
    assert new["params"]["mcpServers"] == []
    assert not session.mcp_verified


async def test_kimi_without_http_mcp_capability_fails_before_session_new(rig):
    error = await rig.start_fails("kimi", {"agent_capabilities": {"loadSession": True}})
    assert error.code == ADAPTER_START_FAILED
    assert "mcpCapabilities.http" in error.message
    assert rig.methods(flavor="kimi") == ["initialize"]


async def test_hermes_starts_with_mcp_although_it_advertises_no_capability(rig):
    session = await rig.start("hermes")
    assert "mcpCapabilities" not in session.agent_capabilities
    assert session.mcp_verified


async def test_hermes_must_identify_itself_as_hermes_agent(rig):
    error = await rig.start_fails("hermes", {"agent_info": {"name": "impostor", "version": "1"}})
    assert error.code == ADAPTER_START_FAILED and not error.retryable  # the same CLI answers the same (D38)
    assert "'impostor'" in error.message and "'hermes-agent'" in error.message


async def test_an_unsupported_protocol_version_is_rejected(rig):
    error = await rig.start_fails("kimi", {"protocol_version": 2})
    assert error.code == PROTOCOL_INVALID_MESSAGE


async def test_a_login_demand_fails_the_start_clearly_and_is_not_retried(rig):
    error = await rig.start_fails("grok", {"auth_required": True})
    assert error.code == ADAPTER_START_FAILED
    assert not error.retryable
    assert "not logged in" in error.message


async def test_a_mode_refusal_with_policy_evidence_is_policy_blocked(rig):
    error = await rig.start_fails(
        "kimi", {"set_mode_error": {"code": -32603, "message": "nope", "data": {"details": {"policyBlocked": True}}}}
    )
    assert error.code == NATIVE_POLICY_BLOCKED


async def test_a_mode_refusal_without_policy_evidence_fails_the_start(rig):
    error = await rig.start_fails("kimi", {"set_mode_error": {"code": -32603, "message": "Internal error"}})
    assert error.code == ADAPTER_START_FAILED


@pytest.mark.parametrize("flavor", ["kimi", "hermes"])
async def test_a_null_mode_result_fails_the_start(rig, flavor):
    error = await rig.start_fails(flavor, {"set_mode_null": True})
    assert error.code == ADAPTER_START_FAILED


async def test_a_hung_mode_set_times_out_as_a_handshake_timeout(rig):
    error = await rig.start_fails("kimi", {"set_mode_hang": True}, timeouts=Timeouts(handshake_ms=300, close_ms=500))
    assert error.code == PROTOCOL_HANDSHAKE_TIMEOUT


async def test_a_slow_initialize_times_out_as_a_handshake_timeout(rig):
    error = await rig.start_fails(
        "hermes", {"initialize_delay_ms": 3000}, timeouts=Timeouts(handshake_ms=300, close_ms=500)
    )
    assert error.code == PROTOCOL_HANDSHAKE_TIMEOUT


async def test_a_refused_session_new_fails_the_start(rig):
    error = await rig.start_fails(
        "hermes",
        {
            "session_new_error": {
                "code": -32603,
                "message": "Internal error",
                "data": {"details": "No LLM provider configured"},
            }
        },
    )
    assert error.code == ADAPTER_START_FAILED and error.retryable


async def test_a_permission_request_during_set_mode_fails_the_start(rig):
    error = await rig.start_fails("kimi", {"set_mode_permission": True})
    assert error.code == UNEXPECTED_NATIVE_INTERACTION
    # The fake's own reply check may not be logged: it exits at stdin EOF, which comes at once.
    inbound = rig.inbound(flavor="kimi")
    reply_at = next(i for i, m in enumerate(inbound) if "result" in m)
    assert inbound[reply_at]["result"] == {"outcome": {"outcome": "cancelled"}}
    assert inbound[reply_at + 1]["method"] == "session/cancel"


async def test_a_grok_policy_marker_on_stderr_blocks_the_start_before_session_new(rig):
    error = await rig.start_fails("grok", {"stderr_on_start": "WARN always-approve disabled by managed policy"})
    assert error.code == NATIVE_POLICY_BLOCKED
    assert "session/new" not in rig.methods(flavor="grok")


async def test_a_crash_before_the_handshake_fails_the_start_with_its_stderr(rig):
    error = await rig.start_fails("kimi", {"exit_on_start": {"code": 9, "stderr": "boom"}})
    assert error.code == ADAPTER_START_FAILED
    assert "boom" in error.message and "9" in error.message


async def test_a_missing_executable_fails_the_start(rig):
    profile = rig.profile("kimi")
    profile = LaunchProfile(**{**profile.__dict__, "command": (str(rig.cwd / "no-such-kimi"),)})
    with pytest.raises(DriverError) as caught:
        await AcpDriver("kimi").start(profile)
    assert caught.value.code == ADAPTER_START_FAILED


# ---- turns ----------------------------------------------------------------------------------


async def test_a_turn_streams_reasoning_tool_progress_and_content_in_order(rig):
    session = await rig.start("kimi")
    _, events = await run_turn(session, "do it [[fake: reason n=2; tool; stream n=3]]")
    assert events[0] == TurnStarted(native_turn_id=None)
    assert events[1:3] == [ReasoningDelta("thinking-1 "), ReasoningDelta("thinking-2 ")]
    tools = [e for e in events if isinstance(e, ToolProgress)]
    assert [(t.phase, t.details["status"]) for t in tools] == [
        ("tool.started", "pending"),
        ("tool.started", "in_progress"),
        ("tool.completed", "completed"),
    ]
    assert {t.tool_call_id for t in tools} == {tools[0].tool_call_id}
    assert tools[-1].details == {
        "name": "shell: echo fake-tool",
        "title": "shell: echo fake-tool",
        "kind": "execute",
        "status": "completed",
    }
    assert [e.text for e in events if isinstance(e, ContentDelta)] == ["part-1 ", "part-2 ", "part-3 "]
    assert events[-1] == TurnCompleted(content=None, stop_reason="end_turn")
    assert len(events) == 1 + 2 + 3 + 3 + 1


async def test_noise_and_foreign_session_updates_are_ignored(rig):
    session = await rig.start("grok", {"noise": True})
    _, events = await run_turn(session, "[[fake: noise; foreign; reply text=done]]")
    assert events == [TurnStarted(), ContentDelta("done"), TurnCompleted(stop_reason="end_turn")]


async def test_another_stop_reason_completes_the_turn_with_it(rig):
    session = await rig.start("grok")
    _, events = await run_turn(session, "[[fake: reply text=cut; stop_reason value=max_tokens]]")
    assert events[-1] == TurnCompleted(stop_reason="max_tokens")


async def test_a_second_turn_while_one_is_active_is_refused(rig):
    session = await rig.start("grok")
    turn = await session.start_turn("t1", "[[fake: hang]]")
    with pytest.raises(DriverError) as caught:
        await session.start_turn("t2", "hello")
    assert caught.value.code == SESSION_NOT_AVAILABLE
    await turn.cancel()
    assert isinstance((await rest_of(turn))[-1], TurnCancelled)


async def test_cancel_sends_one_session_cancel_and_the_next_turn_works(rig):
    session = await rig.start("hermes")
    turn = await session.start_turn("t1", "[[fake: hang]]")
    first = await collect(turn, until=ContentDelta)
    await turn.cancel()
    await turn.cancel()  # once per turn, however often asked
    events = first + await rest_of(turn)
    assert events[-1] == TurnCancelled()
    assert rig.methods(session).count("session/cancel") == 1
    _, events = await run_turn(session, "again")
    assert isinstance(events[-1], TurnCompleted)
    assert not session.needs_rebuild


async def test_a_cancel_the_agent_never_confirms_times_out_and_needs_a_rebuild(rig):
    session = await rig.start("grok", timeouts=Timeouts(cancel_ms=300, close_ms=500))
    turn = await session.start_turn("t1", "[[fake: hang ignore_cancel=1]]")
    await collect(turn, until=ContentDelta)
    await turn.cancel()
    events = await rest_of(turn)
    assert events[-1].error_code == TURN_CANCEL_TIMEOUT
    assert session.needs_rebuild


async def test_it_fails_the_turn_on_a_permission_request_and_keeps_the_session(rig):
    session = await rig.start("kimi")
    _, events = await run_turn(session, "[[fake: reply text=before; ask kind=permission policy_meta=1]]")
    assert events[-1].error_code == UNEXPECTED_NATIVE_INTERACTION  # never NATIVE_POLICY_BLOCKED
    inbound = rig.inbound(session)
    reply_at = next(i for i, m in enumerate(inbound) if "result" in m)
    assert inbound[reply_at]["result"] == {"outcome": {"outcome": "cancelled"}}
    assert inbound[reply_at + 1]["method"] == "session/cancel"
    assert rig.check_ok(session, "interaction_reply")
    assert rig.check_ok(session, "cancel_after_interaction")
    assert not session.needs_rebuild and session.alive
    _, events = await run_turn(session, "next one")
    assert events[-1] == TurnCompleted(stop_reason="end_turn")
    assert "".join(e.text for e in events if isinstance(e, ContentDelta)) == "echo: next one"


async def test_a_permission_request_whose_turn_never_settles_needs_a_rebuild(rig):
    session = await rig.start("kimi", timeouts=Timeouts(cancel_ms=300, close_ms=500))
    _, events = await run_turn(session, "[[fake: ask kind=permission cancel_delay_ms=5000]]")
    assert len(events) == 2
    assert events[-1].error_code == UNEXPECTED_NATIVE_INTERACTION
    assert session.needs_rebuild


async def test_an_elicitation_request_is_cancelled_like_a_permission_request(rig):
    session = await rig.start("grok")
    _, events = await run_turn(session, "[[fake: ask kind=elicitation expect=cancel]]")
    assert events[-1].error_code == UNEXPECTED_NATIVE_INTERACTION
    assert rig.check_ok(session, "interaction_reply")
    assert rig.check_ok(session, "cancel_after_interaction")
    _, events = await run_turn(session, "next")
    assert isinstance(events[-1], TurnCompleted)


async def test_a_permission_request_racing_a_requested_cancel_leaves_the_turn_cancelled(rig):
    session = await rig.start("hermes")
    turn = await session.start_turn("t1", "[[fake: ask kind=permission after=cancel_first]]")
    await turn.cancel()
    events = await rest_of(turn)
    assert events[-1] == TurnCancelled()
    assert rig.check_ok(session, "interaction_reply")
    assert rig.methods(session).count("session/cancel") == 1
    assert not session.needs_rebuild


@pytest.mark.parametrize("kind", ["fs_read", "fs_write", "terminal"])
async def test_other_agent_requests_get_method_not_found_and_the_turn_carries_on(rig, kind):
    session = await rig.start("hermes")
    _, events = await run_turn(session, f"[[fake: ask kind={kind}; reply text=after]]")
    assert events[-2:] == [ContentDelta("after"), TurnCompleted(stop_reason="end_turn")]
    assert rig.check_ok(session, "interaction_reply")


async def test_a_crash_mid_turn_fails_the_turn_as_invalid_message_and_needs_a_rebuild(rig):
    session = await rig.start("kimi")
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
        "missing_jsonrpc",
        "response_without_id",
        "bad_request_id",
        # An answer to an id never sent (D23 on the spec's "only logged").
        "orphan_response",
    ],
)
async def test_garbage_mid_turn_fails_the_turn_as_invalid_message_and_needs_a_rebuild(rig, kind):
    session = await rig.start("grok")
    _, events = await run_turn(session, f"[[fake: reply text=x; garbage kind={kind}]]")
    assert isinstance(events[-1], TurnFailed)
    assert events[-1].error_code == PROTOCOL_INVALID_MESSAGE
    assert session.needs_rebuild


@pytest.mark.parametrize("kind", ["blank_and_crlf"])
async def test_tolerated_garbage_does_not_disturb_the_turn(rig, kind):
    session = await rig.start("grok")
    _, events = await run_turn(session, f"[[fake: garbage kind={kind}; reply text=fine]]")
    assert events == [TurnStarted(), ContentDelta("fine"), TurnCompleted(stop_reason="end_turn")]
    assert not session.needs_rebuild


async def test_a_prompt_error_fails_the_turn_as_a_model_error_and_the_session_stays(rig):
    session = await rig.start("kimi")
    _, events = await run_turn(session, "[[fake: fail message=rate-limited]]")
    assert events[-1].error_code == TURN_INTERRUPTED  # as Codex and Claude report a model error (D38)
    assert "rate-limited" in events[-1].message
    assert not session.needs_rebuild and session.alive
    _, events = await run_turn(session, "[[fake: reply text=fine]]")
    assert events[-1] == TurnCompleted(stop_reason="end_turn")


async def test_a_grok_policy_marker_mid_turn_fails_the_turn_and_cancels_it(rig):
    session = await rig.start("grok")
    marker = "always-approve enable blocked by managed policy"
    _, events = await run_turn(session, f'[[fake: stderr text="{marker}"; hang]]')
    assert events[-1].error_code == NATIVE_POLICY_BLOCKED
    assert "session/cancel" in rig.methods(session)
    assert session.needs_rebuild


# ---- resume ---------------------------------------------------------------------------------


async def test_a_new_process_resumes_the_session_with_load_without_replaying_history(rig):
    first = await rig.start("kimi")
    await run_turn(first, "remember the word kiwi")
    session_id = first.native_session_id
    await first.close()

    second = await rig.start("kimi", resume=session_id)
    assert second.native_session_id == session_id and second.resumed
    assert rig.methods(second) == ["initialize", "session/load", "session/set_mode"]
    load = rig.inbound(second)[1]
    assert load["params"]["sessionId"] == session_id
    assert load["params"]["mcpServers"][0]["name"] == "groupx"
    assert [u["sessionUpdate"] for u in second.replay] == ["user_message_chunk", "agent_message_chunk"]
    _, events = await run_turn(second, "what was it?")
    assert "".join(e.text for e in events if isinstance(e, ContentDelta)) == "echo: what was it?"


async def test_a_load_that_replays_for_longer_than_the_handshake_timeout_is_not_a_stalled_cli(rig):
    first = await rig.start("kimi")
    for word in ("one", "two", "three"):
        await run_turn(first, f"remember {word}")
    session_id = first.native_session_id
    await first.close()

    # Six updates 250 ms apart: 1.5 s of replay, each update well inside a 1 s handshake bound.
    quick = Timeouts(handshake_ms=1_000, request_ms=2_000, cancel_ms=5_000, close_ms=2_000)
    second = await rig.start("kimi", {"replay_interval_ms": 250}, resume=session_id, timeouts=quick)
    assert second.resumed and second.replayed == 6


async def test_loading_an_unknown_session_is_not_available(rig):
    error = await rig.start_fails("grok", resume="no-such-session")
    assert error.code == SESSION_NOT_AVAILABLE


async def test_resume_without_load_support_is_unsupported(rig):
    caps = {"loadSession": False, "mcpCapabilities": {"http": True}}
    error = await rig.start_fails("kimi", {"agent_capabilities": caps}, resume="anything")
    assert error.code == NATIVE_RESUME_UNSUPPORTED
    assert "session/load" not in rig.methods(flavor="kimi")


async def test_a_hermes_refusal_after_a_silent_unknown_load_fails_the_turn(rig):
    session = await rig.start("hermes", resume=str(uuid.uuid4()))
    _, events = await run_turn(session, "hello")
    assert events[-1] == TurnFailed(PROTOCOL_INVALID_MESSAGE, "agent refused")
    assert session.needs_rebuild


# ---- close ----------------------------------------------------------------------------------


async def test_close_sends_session_close_only_when_advertised(rig):
    kimi = await rig.start("kimi")
    grok = await rig.start("grok")
    await asyncio.gather(kimi.close(), grok.close(), kimi.close())
    assert rig.methods(kimi)[-1] == "session/close"
    assert "session/close" not in rig.methods(grok)
    assert not kimi.alive and not grok.alive
    assert kimi.process.returncode == 0


@pytest.mark.parametrize("ignore_cancel", [0, 1])
async def test_closing_during_a_turn_cancels_it_and_interrupts_the_turn(rig, ignore_cancel):
    session = await rig.start("grok")
    turn = await session.start_turn("t1", f"[[fake: hang ignore_cancel={ignore_cancel}]]")
    await collect(turn, until=ContentDelta)
    await session.close()
    events = await rest_of(turn)
    assert events[-1].error_code == TURN_INTERRUPTED
    assert rig.methods(session)[-1] == "session/cancel"


async def test_close_takes_down_a_stubborn_agent_and_its_grandchild(rig, monkeypatch):
    monkeypatch.setattr("agents.drivers.process.TERM_WAIT_S", 0.5)
    session = await rig.start(
        "grok", {"ignore_eof": True, "ignore_sigterm": True, "spawn_grandchild": True}, timeouts=Timeouts(close_ms=200)
    )
    (spawn,) = rig.records(session, kind="spawn")
    await session.close()
    assert session.process.returncode == -9
    await eventually(lambda: pid_gone(spawn["pid"]), what="the grandchild to die")


# ---- registry -------------------------------------------------------------------------------


def test_the_registry_gives_acp_drivers_and_refuses_unknown_names():
    for name in ("grok", "kimi", "hermes"):
        driver = get_driver(name)
        assert isinstance(driver, AcpDriver) and driver.name == name
    with pytest.raises(DriverError) as caught:
        get_driver("copilot")
    assert caught.value.code == ADAPTER_NOT_FOUND and not caught.value.retryable


def test_policy_evidence_is_searched_four_levels_deep_only():
    assert has_policy_evidence({"a": {"b": {"reason": "disabled by managed policy"}}})
    assert has_policy_evidence({"code": "policy_blocked"})
    assert not has_policy_evidence({"a": {"b": {"c": {"d": {"policyBlocked": True}}}}})
    assert not has_policy_evidence({"details": "No LLM provider configured"})
    assert not has_policy_evidence({"policyBlocked": False})

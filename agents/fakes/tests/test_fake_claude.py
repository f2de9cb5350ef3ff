"""Drive the fake Claude Code stream-json CLI over real pipes (NATIVE_PROTOCOLS §4, §6.8, §6.10).

Every wait is a condition with a deadline (reader thread + queue), never a fixed sleep.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from pathlib import Path
from typing import Any

import pytest

from agents.fakes import wirelog
from agents.fakes.fake_claude import BASE_ARGV

from ._support import GroupxMcpStub, LineProc, fake_env, start_mcp_stub


def mcp_config(url: str = "http://127.0.0.1:9/mcp", binding: str | None = "bind-ok") -> str:
    headers = {"X-GroupX-Binding": binding} if binding else {}
    return json.dumps({"mcpServers": {"groupx": {"type": "http", "url": url, "headers": headers}}})


def argv_for(session: str, resume: bool = False, url: str | None = None) -> list[str]:
    mcp = ["--mcp-config", mcp_config(url)] if url else []
    return [*BASE_ARGV, *mcp, "--resume" if resume else "--session-id", session]


class Claude(LineProc):
    ids = 0

    def control(self, subtype: str, **fields: Any) -> str:
        self.ids += 1
        rid = f"groupx-{subtype}-{self.ids}"
        self.send({"type": "control_request", "request_id": rid, "request": {"subtype": subtype, **fields}})
        return rid

    def control_response(self, rid: str) -> dict[str, Any]:
        return self.wait_for(lambda m: m.get("type") == "control_response" and m["response"].get("request_id") == rid)[
            "response"
        ]

    def handshake(self) -> dict[str, Any]:
        init = self.control_response(self.control("initialize"))
        assert self.control_response(self.control("set_permission_mode", mode="bypassPermissions"))["response"] == {
            "mode": "bypassPermissions"
        }
        return init

    def prompt(self, text: str) -> None:
        self.send({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}})

    def until_result(self) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        frames = self.collect_until(lambda m: m.get("type") == "result")
        return frames, frames[-1]


def events(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f["event"] for f in frames if f.get("type") == "stream_event"]


def text_of(frames: list[dict[str, Any]]) -> str:
    return "".join(
        e["delta"]["text"]
        for e in events(frames)
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta"
    )


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    out = {"log": tmp_path / "logs", "state": tmp_path / "state", "cwd": tmp_path / "work"}
    out["cwd"].mkdir()
    return out


@pytest.fixture
def claude(dirs: dict[str, Path]):
    procs: list[Claude] = []

    def start(
        scenario: dict[str, Any] | None = None,
        argv: list[str] | None = None,
        session: str | None = None,
        resume: bool = False,
        url: str | None = None,
        **env: str,
    ) -> Claude:
        argv = argv if argv is not None else argv_for(session or str(uuid.uuid4()), resume, url)
        proc = Claude("claude", argv, fake_env(dirs["log"], dirs["state"], scenario, **env), dirs["cwd"])
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        proc.close()


@pytest.fixture
def mcp_url():
    server, url = start_mcp_stub()
    yield url
    server.shutdown()
    server.server_close()


# ---------------------------------------------------------------------------------- argv, shapes


SID = "6c1e9a52-0d4f-4b8a-9c51-2f3e4d5a6b7c"


@pytest.mark.parametrize(
    "argv",
    [
        list(BASE_ARGV),
        [*BASE_ARGV, "--session-id", SID, "--resume", SID],
        [*BASE_ARGV, "--session-id", "not-a-uuid"],
        [*BASE_ARGV, "--model", "x", "--session-id", SID],
        [*BASE_ARGV, "--mcp-config", "{not json", "--session-id", SID],
        [*BASE_ARGV, "--mcp-config", mcp_config(binding=None), "--session-id", SID],
        [*BASE_ARGV, "--session-id", SID, "--mcp-config", mcp_config()],
        [*BASE_ARGV[:-1], "default", "--session-id", SID],
        [*BASE_ARGV, "--mcp-config", "/nonexistent/groupx-mcp.json", "--session-id", SID],
    ],
)
def test_wrong_argv_exits_64(claude, dirs, argv: list[str]) -> None:
    p = claude(argv=argv)
    assert p.wait_exit() == 64
    assert "invalid argv" in p.stderr_text()
    assert wirelog.wait_for_records(dirs["log"], kind="exit")[-1]["why"] == "argv"


def test_handshake_shapes(claude, dirs) -> None:
    p = claude(url="http://127.0.0.1:9/mcp")
    init = p.handshake()
    assert init["subtype"] == "success" and init["request_id"].startswith("groupx-initialize")
    body = init["response"]
    assert body["current_permission_mode"] == "bypassPermissions" and body["pid"] == p.proc.pid
    assert {"commands", "models", "account"} <= set(body)
    bad = p.control_response(p.control("set_permission_mode", mode="yolo"))
    assert bad["subtype"] == "error" and bad["error_code"] == "invalid_mode"
    other = p.control_response(p.control("rewind_files"))
    assert other["subtype"] == "error" and other["error_code"] == "unsupported_request"  # L6
    status = p.control_response(p.control("mcp_status"))["response"]["mcpServers"]
    assert status[0]["name"] == "groupx" and status[0]["scope"] == "dynamic"
    assert status[0]["config"]["headers"] == {"X-GroupX-Binding": "bind-ok"}
    assert not any(m.get("type") == "system" for m in p.seen)  # system/init waits for a user message
    p.close()
    assert p.proc.returncode == 0
    start = wirelog.read_records(dirs["log"], flavor="claude", kind="start")[0]
    assert start["argv"][:9] == list(BASE_ARGV)
    assert [c["ok"] for c in wirelog.read_records(dirs["log"], kind="check", name="set_mode")] == [True, False]


@pytest.mark.parametrize(
    ("scenario", "check"),
    [
        ({"omit_current_permission_mode": True}, lambda r: "current_permission_mode" not in r["response"]),
        ({"init_permission_mode": "default"}, lambda r: r["response"]["current_permission_mode"] == "default"),
        ({"initialize_error": "boom"}, lambda r: r["subtype"] == "error" and r["error"] == "boom"),
    ],
)
def test_initialize_scenarios(claude, scenario: dict[str, Any], check: Any) -> None:
    p = claude(scenario)
    assert check(p.control_response(p.control("initialize")))


def test_set_mode_scenarios(claude) -> None:
    p = claude({"set_mode_result": "default"})
    p.control_response(p.control("initialize"))
    assert p.control_response(p.control("set_permission_mode", mode="bypassPermissions"))["response"] == {
        "mode": "default"
    }
    q = claude({"set_mode_error": {"error": "managed policy", "error_code": "policy"}})
    q.control_response(q.control("initialize"))
    err = q.control_response(q.control("set_permission_mode", mode="bypassPermissions"))
    assert err["subtype"] == "error" and err["error"] == "managed policy"


# ---------------------------------------------------------------------------------------- turns


def test_streamed_turn_with_reasoning_tool_and_content(claude, dirs) -> None:
    session = str(uuid.uuid4())
    p = claude(session=session)
    p.handshake()
    p.prompt("old [[fake: crash]]\n\n[current_message]\ngo [[fake: reason n=2; tool; stream n=3 delay_ms=1]]")
    frames, result = p.until_result()
    init = frames[0]
    assert init["type"] == "system" and init["subtype"] == "init" and init["session_id"] == session
    assert init["cwd"] == str(dirs["cwd"]) and init["permissionMode"] == "bypassPermissions"
    assert frames[1]["subtype"] == "status"
    ev = events(frames)
    assert ev[0]["type"] == "message_start" and ev[1]["content_block"]["type"] == "thinking"
    assert [e["delta"]["type"] for e in ev if e["type"] == "content_block_delta"][:2] == ["thinking_delta"] * 2
    tool_start = next(e for e in ev if e["type"] == "content_block_start" and e["content_block"]["type"] == "tool_use")
    assert tool_start["content_block"]["name"] == "Bash" and tool_start["content_block"]["id"]
    results = [f for f in frames if f.get("type") == "user"]
    assert results[0]["message"]["content"][0]["tool_use_id"] == tool_start["content_block"]["id"]
    assert results[0]["message"]["content"][0]["is_error"] is False
    assert text_of(frames) == "part-1 part-2 part-3 "
    # L7: each block's complete assistant frame comes before its content_block_stop.
    kinds = [f["type"] if f["type"] != "stream_event" else f["event"]["type"] for f in frames]
    for i, kind in enumerate(kinds):
        if kind == "content_block_stop":
            assert kinds[i - 1] == "assistant"
    assert kinds[-4:] == ["content_block_stop", "message_delta", "message_stop", "result"]
    assert result["subtype"] == "success" and result["is_error"] is False
    assert result["terminal_reason"] == "completed" and result["num_turns"] == 2
    assert result["result"] == "part-1 part-2 part-3 " and result["session_id"] == session
    assert all(f["session_id"] == session for f in frames if f["type"] in ("stream_event", "assistant", "user"))


def test_system_init_before_every_prompt(claude) -> None:
    p = claude()
    p.handshake()
    for text in ("one", "two"):
        p.prompt(text)
        frames, result = p.until_result()
        assert frames[0]["subtype"] == "init" and result["result"] == f"echo: {text}"


def test_interrupt_of_a_hang_then_next_turn(claude) -> None:
    p = claude()
    p.handshake()
    p.prompt("[[fake: hang]]")
    p.wait_for(lambda m: m.get("type") == "stream_event" and m["event"]["type"] == "content_block_delta")
    rid = p.control("interrupt")
    frames, result = p.until_result()
    assert frames[0]["type"] == "control_response" and frames[0]["response"]["request_id"] == rid
    assert frames[1]["type"] == "assistant" and frames[1]["message"]["content"][0]["text"] == "working… "
    assert frames[2]["type"] == "user" and frames[2]["message"]["content"][0]["text"] == "[Request interrupted by user]"
    assert result["subtype"] == "error_during_execution" and result["is_error"] is True
    assert result["terminal_reason"] == "aborted_streaming"
    p.prompt("again")
    frames, result = p.until_result()
    assert result["subtype"] == "success" and text_of(frames) == "echo: again"
    p.close_stdin()
    assert p.wait_exit() == 0


def test_interrupt_during_tool_aborts_tools_and_exit_1_after_error(claude) -> None:
    p = claude()
    p.handshake()
    p.prompt("[[fake: hang cancel_during=tool]]")
    p.wait_for(lambda m: m.get("type") == "stream_event" and m["event"]["type"] == "message_stop")
    p.control("interrupt")
    frames, result = p.until_result()
    assert result["terminal_reason"] == "aborted_tools"
    tool_result = next(f for f in frames if f.get("type") == "user")["message"]["content"][0]
    assert tool_result["type"] == "tool_result" and tool_result["is_error"] is True
    p.close_stdin()
    assert p.wait_exit() == 1  # the last result was an error


def test_complete_on_interrupt_owes_a_stray_result(claude) -> None:
    p = claude()
    p.handshake()
    p.prompt("[[fake: hang complete_on_interrupt]]")
    p.wait_for(lambda m: m.get("type") == "stream_event" and m["event"]["type"] == "content_block_delta")
    p.control("interrupt")
    _frames, result = p.until_result()
    assert result["subtype"] == "success" and result["result"] == "working… "
    p.prompt("next")
    stray = p.wait_for(lambda m: m.get("type") in ("result", "system"))
    assert stray["type"] == "result" and stray["terminal_reason"] == "aborted_streaming"  # before system/init
    frames, result = p.until_result()
    assert frames[0]["subtype"] == "init" and result["subtype"] == "success" and result["result"] == "echo: next"


INTERACTIVE_DENY = {"behavior": "deny", "message": "GroupX runs Claude Code unrestricted"}


@pytest.mark.parametrize("kind", ["can_use_tool", "elicitation", "request_user_dialog"])
def test_interactive_ask_expects_deny(claude, dirs, kind: str) -> None:
    p = claude()
    p.handshake()
    p.prompt(f"[[fake: ask kind={kind}]]")
    ask = p.wait_for(lambda m: m.get("type") == "control_request")
    assert ask["request"]["subtype"] == kind
    p.send(
        {
            "type": "control_response",
            "response": {"subtype": "success", "request_id": ask["request_id"], "response": INTERACTIVE_DENY},
        }
    )
    p.control("interrupt")
    _frames, result = p.until_result()
    assert result["is_error"] is True
    assert result["terminal_reason"] == ("aborted_tools" if kind == "can_use_tool" else "aborted_streaming")
    recs = wirelog.read_records(dirs["log"], kind="check")
    assert [c["ok"] for c in wirelog.checks(recs, "interaction_reply")] == [True]
    assert [c["ok"] for c in wirelog.checks(recs, "cancel_after_interaction")] == [True]


@pytest.mark.parametrize("kind", ["hook_callback", "mcp_message", "oauth_token_refresh"])
def test_other_ask_expects_error_and_completes(claude, kind: str) -> None:
    p = claude()
    p.handshake()
    p.prompt(f"[[fake: ask kind={kind}; reply text=done]]")
    ask = p.wait_for(lambda m: m.get("type") == "control_request")
    p.send(
        {
            "type": "control_response",
            "response": {
                "subtype": "error",
                "request_id": ask["request_id"],
                "error": f"Unsupported control request: {kind}",
            },
        }
    )
    _frames, result = p.until_result()
    assert result["subtype"] == "success" and result["result"] == "done"


def test_wrong_ask_reply_exits_72(claude, dirs) -> None:
    p = claude()
    p.handshake()
    p.prompt("[[fake: ask kind=can_use_tool]]")
    ask = p.wait_for(lambda m: m.get("type") == "control_request")
    p.send(
        {
            "type": "control_response",
            "response": {
                "subtype": "success",
                "request_id": ask["request_id"],
                "response": {"behavior": "allow", "updatedInput": {}},
            },
        }
    )
    assert p.wait_exit() == 72
    assert wirelog.read_records(dirs["log"], kind="check", name="interaction_reply")[0]["ok"] is False


def test_malformed_input_line_kills_it(claude, dirs) -> None:
    p = claude()
    p.handshake()
    p.send_raw(b"{not json\n")
    assert p.wait_exit() == 1
    assert "Error parsing streaming input line" in p.stderr_text()
    assert wirelog.read_records(dirs["log"], kind="in_bad")


def test_crash_and_garbage(claude, dirs) -> None:
    p = claude()
    p.handshake()
    p.prompt("[[fake: garbage kind=not_json then=continue; reply text=after]]")
    assert p.wait_for(lambda raw: True, raw=True).startswith(b"fake garbage")
    _frames, result = p.until_result()
    assert result["result"] == "after"
    p.prompt("[[fake: crash code=9 after=delta]]")
    p.wait_for(lambda m: m.get("type") == "stream_event" and m["event"]["type"] == "content_block_delta")
    assert p.wait_exit() == 9


def test_fail_and_not_logged_in(claude) -> None:
    p = claude()
    p.handshake()
    p.prompt("[[fake: fail message=overloaded]]")
    _frames, result = p.until_result()
    assert result["subtype"] == "error_during_execution" and result["api_error_status"] == 529
    assert result["terminal_reason"] == "api_error"
    q = claude({"not_logged_in": True})
    q.handshake()
    q.prompt("hello")
    frames, result = q.until_result()
    assert frames[-2]["type"] == "assistant" and frames[-2]["error"] == "authentication_failed"
    assert result["subtype"] == "success" and result["is_error"] is True  # L4
    q.close_stdin()
    assert q.wait_exit() == 1


def test_tolerated_extras(claude) -> None:
    p = claude()
    p.handshake()
    p.prompt("[[fake: noise; foreign; fallback_only text=final; dup_terminal]]")
    frames, result = p.until_result()
    assert any(f["type"] == "rate_limit_event" for f in frames)
    foreign, own = [f for f in frames if f["type"] == "assistant"]
    assert foreign["session_id"] != result["session_id"] and own["message"]["content"][0]["text"] == "final"
    assert not any(e["type"] == "content_block_delta" for e in events(frames))  # fallback only
    assert p.wait_for(lambda m: m.get("type") == "result")["uuid"] == result["uuid"]  # dup_terminal


@pytest.mark.parametrize(
    ("variant", "check"),
    [
        ("missing", None),
        ("malformed", lambda f: "session_id" not in f),
        ("wrong_session", lambda f: f["session_id"] != SID),
        ("wrong_cwd", lambda f: f["cwd"] != os.getcwd()),
        ("downgraded_mode", lambda f: f["permissionMode"] == "default"),
    ],
)
def test_init_frame_variants(claude, variant: str, check: Any) -> None:
    p = claude({"init_frame": variant}, session=SID)
    p.handshake()
    p.prompt("hi")
    frames, _result = p.until_result()
    inits = [f for f in frames if f.get("subtype") == "init"]
    if check is None:
        assert inits == []
    else:
        assert len(inits) == 1 and check(inits[0])


# ---------------------------------------------------------------------------------- sessions


def test_resume_in_a_new_process(claude, dirs) -> None:
    session = str(uuid.uuid4())
    first = claude(session=session)
    first.handshake()
    first.prompt("remember this [[fake: reply text=ok-1]]")
    first.until_result()
    first.close()
    assert first.proc.returncode == 0

    again = claude(session=session)  # L2: a new start with the same id is refused
    assert again.wait_exit() == 1 and "is already in use" in again.stderr_text()

    second = claude(session=session, resume=True)
    second.handshake()
    second.prompt("next")
    frames, result = second.until_result()
    assert frames[0]["session_id"] == session and result["result"] == "echo: next"


def test_resume_of_an_unknown_session(claude) -> None:
    session = str(uuid.uuid4())
    p = claude(session=session, resume=True)
    frames = p.wait_eof()
    assert p.wait_exit() == 1
    assert f"No conversation found with session ID: {session}" in p.stderr_text()
    assert len(frames) == 1 and frames[0]["type"] == "result" and frames[0]["num_turns"] == 0  # L3
    assert frames[0]["subtype"] == "error_during_execution" and frames[0]["is_error"] is True


def test_never_prompted_session_cannot_be_resumed(claude) -> None:
    session = str(uuid.uuid4())
    first = claude(session=session)
    first.handshake()
    first.close()
    second = claude(session=session, resume=True)
    assert second.wait_exit() == 1  # L11: persisted only from the first user message on


@pytest.mark.skipif(os.geteuid() != 0, reason="the root rule only applies as root")
def test_root_check(claude) -> None:
    p = claude({"root_check": True}, IS_SANDBOX="0")
    assert p.wait_exit() == 1
    assert "cannot be used with root/sudo privileges" in p.stderr_text()
    q = claude({"root_check": True}, IS_SANDBOX="1")
    q.handshake()


# ------------------------------------------------------------------------------------------ MCP


def test_mcp_tool_call_round_trip(claude, dirs, mcp_url) -> None:
    p = claude({"mcp_probe_on_start": True}, url=mcp_url)
    p.handshake()
    p.prompt("[[fake: mcp-publish text=hi]]")
    frames, result = p.until_result()
    assert frames[0]["mcp_servers"] == [{"name": "groupx", "status": "connected"}]
    assert "mcp__groupx__publish" in frames[0]["tools"]
    tool = next(
        e for e in events(frames) if e["type"] == "content_block_start" and e["content_block"]["type"] == "tool_use"
    )["content_block"]
    assert tool["name"] == "mcp__groupx__publish"
    tool_result = next(f for f in frames if f["type"] == "user")["message"]["content"][0]
    assert tool_result["tool_use_id"] == tool["id"] and "is_error" not in tool_result  # as the real CLI
    assert result["result"] == "mcp:publish:ok:evt-1"
    assert GroupxMcpStub.calls[-1] == {
        "name": "publish",
        "arguments": {"content": "hi", "clientCommandId": GroupxMcpStub.calls[-1]["arguments"]["clientCommandId"]},
    }
    assert set(GroupxMcpStub.bindings) == {"bind-ok"}


def test_mcp_config_may_be_a_file_path_as_the_real_cli_accepts(claude, dirs, mcp_url, tmp_path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(mcp_config(mcp_url))  # the stub knows only "bind-ok"
    p = claude(argv=[*BASE_ARGV, "--mcp-config", str(config), "--session-id", str(uuid.uuid4())])
    p.handshake()
    p.prompt("[[fake: mcp-publish text=hi]]")
    _frames, result = p.until_result()
    assert result["result"] == "mcp:publish:ok:evt-1"
    assert set(GroupxMcpStub.bindings) == {"bind-ok"}


def test_startup_scenarios(claude, dirs) -> None:
    p = claude({"exit_before_handshake": {"code": 9, "stderr": "boom"}})
    assert p.wait_exit() == 9 and "boom" in p.stderr_text()
    q = claude({"no_handshake_reply": True})
    q.control("initialize")
    wirelog.wait_for_records(dirs["log"], kind="initialize_unanswered", pid=q.proc.pid)
    r = claude({"set_mode_hang": True})
    r.control_response(r.control("initialize"))
    r.control("set_permission_mode", mode="bypassPermissions")
    wirelog.wait_for_records(dirs["log"], kind="set_mode_hang", pid=r.proc.pid)


def test_mcp_probe_failure_shows_in_init_and_status(claude) -> None:
    p = claude({"mcp_probe_on_start": True}, url="http://127.0.0.1:9/mcp")  # nothing listens on port 9
    p.handshake()
    p.prompt("hi")
    frames, _result = p.until_result()
    assert frames[0]["mcp_servers"] == [{"name": "groupx", "status": "failed"}]
    status = p.control_response(p.control("mcp_status"))["response"]["mcpServers"][0]
    assert status["status"] == "failed" and status["error"] == "connect_error"


def test_interrupt_before_the_turn_starts(claude, dirs) -> None:
    # An MCP endpoint that accepts and never answers holds the first prompt back (the probe waits
    # for its timeout), so the interrupt lands while the prompt is only queued.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/mcp"
        p = claude({"mcp_probe_on_start": True, "mcp_timeout_ms": 3000}, url=url)
        p.handshake()
        p.prompt("[[fake: hang]]")
        p.control("interrupt")
        wirelog.wait_for_records(dirs["log"], kind="interrupt_early")
        _frames, result = p.until_result()
    assert result["terminal_reason"] == "aborted_streaming"

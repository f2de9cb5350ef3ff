"""Drive the fake ACP agent over real pipes (NATIVE_PROTOCOLS §6.10). No Django, no DB.

Every wait is a condition with a deadline (reader thread + queue), never a fixed sleep.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from agents.fakes import _fakecore as core
from agents.fakes import wirelog
from agents.fakes.fake_acp import GROK_ARGV
from agents.fakes.tests._support import DEADLINE, GroupxMcpStub, LineProc, fake_env, start_mcp_stub

ARGV = {"grok": list(GROK_ARGV), "kimi": ["acp"], "hermes": ["--yolo", "acp"]}


class FakeProc(LineProc):
    """One fake ACP child: ``LineProc`` plus JSON-RPC requests and their answers."""

    def __init__(self, shim: str, argv: list[str], env: dict[str, str], cwd: Path):
        super().__init__(shim, argv, env, cwd)
        self._ids = 0

    def request(self, method: str, params: dict[str, Any]) -> str:
        self._ids += 1
        req_id = f"t:{self._ids}"
        self.send({"jsonrpc": "2.0", "id": req_id, "method": method, "params": params})
        return req_id

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def response(self, req_id: str, timeout: float = DEADLINE) -> dict[str, Any]:
        return self.wait_for(lambda m: m.get("id") == req_id and "method" not in m, timeout)

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.response(self.request(method, params))

    def updates_until(self, req_id: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        start = len(self.seen)
        resp = self.response(req_id)
        ups = [
            m["params"]["update"]
            for m in self.seen[start:]
            if isinstance(m, dict) and m.get("method") == "session/update"
        ]
        return ups, resp


@pytest.fixture
def env_dirs(tmp_path: Path) -> dict[str, Path]:
    dirs = {"log": tmp_path / "logs", "state": tmp_path / "state", "cwd": tmp_path / "work"}
    dirs["cwd"].mkdir()
    return dirs


@pytest.fixture
def spawn(env_dirs: dict[str, Path]):
    procs: list[FakeProc] = []

    def start(
        flavor: str, scenario: dict[str, Any] | None = None, argv: list[str] | None = None, shim: str | None = None
    ) -> FakeProc:
        env = fake_env(env_dirs["log"], env_dirs["state"], scenario)
        proc = FakeProc(shim or flavor, ARGV[flavor] if argv is None else argv, env, env_dirs["cwd"])
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        proc.close()


def mcp_entry(url: str = "http://127.0.0.1:9/mcp", binding: str = "bind-ok") -> dict[str, Any]:
    return {"type": "http", "name": "groupx", "url": url, "headers": [{"name": "X-GroupX-Binding", "value": binding}]}


def start_session(p: FakeProc, cwd: Path, url: str | None = None, mode: str | None = None) -> str:
    init = p.call(
        "initialize",
        {
            "protocolVersion": 1,
            "clientCapabilities": {},
            "clientInfo": {"name": "groupx", "title": "GroupX", "version": "0.1.0"},
        },
    )
    assert init["result"]["protocolVersion"] == 1
    new = p.call("session/new", {"cwd": str(cwd), "mcpServers": [mcp_entry(url)] if url else []})
    sid = new["result"]["sessionId"]
    if mode:
        assert p.call("session/set_mode", {"sessionId": sid, "modeId": mode})["result"] == {}
    return sid


def prompt(p: FakeProc, sid: str, text: str) -> str:
    return p.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]})


def text_of(updates: list[dict[str, Any]]) -> str:
    return "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")


# ------------------------------------------------------------------------------ directive parser


def test_directive_parser_quotes_flags_and_marker() -> None:
    text = (
        "history: [[fake: crash code=3]]\n\n[current_message]\nold\n[current_message]\n"
        'Hi [[fake: reason n=2; mcp tool=publish args=\'{"content":"a; b]]"}\' list; reply text="x \\"y\\""]]'
    )
    directives, message = core.turn_plan(text, None)
    assert [d.name for d in directives] == ["reason", "mcp", "reply"]
    assert directives[0].get_int("n", 1) == 2
    assert directives[1].get_json("args") == {"content": "a; b]]"}
    assert directives[1].get_bool("list") is True
    assert directives[2].get_str("text") == 'x "y"'
    assert message == "Hi"


def test_directive_defaults_and_errors() -> None:
    directives, message = core.turn_plan("[groupx_current_message]\nplain text", ["reason", "echo chunks=3"])
    assert [(d.name, d.params) for d in directives] == [("reason", {}), ("echo", {"chunks": "3"})]
    assert message == "plain text"
    bad, _ = core.turn_plan("x [[fake: reply text='open", None)
    assert bad[0].name == "invalid"
    assert core.split_text("abcdefg", 3) == ["abc", "de", "fg"]


# ---------------------------------------------------------------------------------- argv, shapes


@pytest.mark.parametrize("flavor", ["grok", "kimi", "hermes"])
def test_exact_argv_is_accepted(spawn, env_dirs, flavor: str) -> None:
    p = spawn(flavor)
    init = p.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    assert init["jsonrpc"] == "2.0"
    caps = init["result"]["agentCapabilities"]
    assert caps["loadSession"] is True
    p.close()
    assert p.proc.returncode == 0
    start = wirelog.read_records(env_dirs["log"], flavor=flavor, kind="start")[0]
    assert start["argv"] == ARGV[flavor]
    assert wirelog.read_records(env_dirs["log"], flavor=flavor, kind="exit")[-1]["why"] == "eof"


@pytest.mark.parametrize(
    ("shim", "argv"),
    [("kimi", ["acp", "--verbose"]), ("hermes", ["acp"]), ("grok", ["agent", "stdio"]), ("kimi", ["--yolo", "acp"])],
)
def test_wrong_argv_exits_64(spawn, env_dirs, shim: str, argv: list[str]) -> None:
    p = spawn(shim, argv=argv)
    assert p.wait_exit() == 64
    assert "invalid argv" in p.stderr_text()
    exits = wirelog.wait_for_records(env_dirs["log"], kind="exit")
    assert exits[-1]["code"] == 64 and exits[-1]["why"] == "argv"


def test_kimi_handshake_shapes_and_checks(spawn, env_dirs) -> None:
    p = spawn("kimi")
    init = p.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})["result"]
    assert init["agentInfo"] == {"name": "Kimi Code CLI", "version": "2.1.0"}
    assert init["agentCapabilities"]["mcpCapabilities"]["http"] is True
    assert "close" in init["agentCapabilities"]["sessionCapabilities"]
    p.notify("initialized", {})  # a violation on ACP: must be logged
    new = p.call("session/new", {"cwd": str(env_dirs["cwd"]), "mcpServers": [mcp_entry()]})["result"]
    assert {m["id"] for m in new["modes"]["availableModes"]} >= {"default", "auto"}
    sid = new["sessionId"]
    assert p.call("session/set_mode", {"sessionId": sid, "modeId": "auto"})["result"] == {}
    assert p.call("session/close", {"sessionId": sid})["result"] == {}
    bad = p.call("session/new", {"cwd": "relative/dir", "mcpServers": []})
    assert bad["error"]["code"] == -32602
    recs = wirelog.read_records(env_dirs["log"], flavor="kimi")
    assert [c["ok"] for c in wirelog.checks(recs, "no_initialized")] == [False]
    assert [c["ok"] for c in wirelog.checks(recs, "set_mode")] == [True]
    assert [c["ok"] for c in wirelog.checks(recs, "mcp_binding_present")] == [True]
    assert [c["ok"] for c in wirelog.checks(recs, "session_close_advertised")] == [True]
    assert wirelog.inbound_methods(recs)[:3] == ["initialize", "initialized", "session/new"]


def test_hermes_and_grok_shapes(spawn, env_dirs) -> None:
    h = spawn("hermes")
    init = h.call("initialize", {"protocolVersion": 1})["result"]
    assert init["agentInfo"]["name"] == "hermes-agent"
    assert "mcpCapabilities" not in init["agentCapabilities"]
    sid = start_session(h, env_dirs["cwd"], url="http://127.0.0.1:9/mcp", mode="dont_ask")  # HTTP forced on
    ups, resp = h.updates_until(prompt(h, sid, "hi"))
    assert resp["result"]["stopReason"] == "end_turn" and "usage" in resp["result"]
    assert all("messageId" not in u for u in ups)  # Hermes 0.19 chunks carry none (transcript)

    g = spawn("grok")
    init = g.call("initialize", {"protocolVersion": 1})["result"]
    assert "agentInfo" not in init and init["_meta"]["agentVersion"] == "0.2.111"
    new = g.call("session/new", {"cwd": str(env_dirs["cwd"]), "mcpServers": [mcp_entry()]})["result"]
    assert set(new) == {"sessionId"}


def test_missing_jsonrpc_request_gets_invalid_request(spawn, env_dirs) -> None:
    p = spawn("kimi")
    p.send({"id": 5, "method": "initialize", "params": {"protocolVersion": 1}})
    assert p.response(5)["error"]["code"] == -32600
    assert wirelog.wait_for_records(env_dirs["log"], kind="in_bad")[0]["reason"] == "missing_jsonrpc"


def test_auth_required_and_exit_on_start(spawn) -> None:
    p = spawn("grok", {"auth_required": True})
    p.call("initialize", {"protocolVersion": 1})
    err = p.call("session/new", {"cwd": "/tmp", "mcpServers": []})["error"]
    assert err == {"code": -32000, "message": "Authentication required"}
    q = spawn("kimi", {"exit_on_start": {"code": 9, "stderr": "boom"}})
    assert q.wait_exit() == 9
    assert "boom" in q.stderr_text()


# ----------------------------------------------------------------------------------------- turns


def test_echo_is_the_default_turn(spawn, env_dirs) -> None:
    p = spawn("kimi")
    sid = start_session(p, env_dirs["cwd"], mode="auto")
    ups, resp = p.updates_until(prompt(p, sid, "packet [[fake: fail]]\n\n[current_message]\nhello there"))
    assert resp["result"] == {"stopReason": "end_turn"}
    chunks = [u for u in ups if u["sessionUpdate"] == "agent_message_chunk"]
    assert len(chunks) == 2 and text_of(ups) == "echo: hello there"
    assert len({c["messageId"] for c in chunks}) == 1


def test_streamed_turn_with_reasoning_tool_and_content(spawn, env_dirs) -> None:
    p = spawn("grok")
    sid = start_session(p, env_dirs["cwd"])
    ups, resp = p.updates_until(
        prompt(p, sid, "[current_message]\ngo [[fake: reason n=2; tool; stream n=4 delay_ms=1]]")
    )
    kinds = [(u["sessionUpdate"], u.get("status")) for u in ups]
    assert kinds == [
        ("agent_thought_chunk", None),
        ("agent_thought_chunk", None),
        ("tool_call", "pending"),
        ("tool_call_update", "in_progress"),
        ("tool_call_update", "completed"),
        *[("agent_message_chunk", None)] * 4,
    ]
    assert ups[2]["kind"] == "execute" and ups[2]["toolCallId"] == ups[4]["toolCallId"]
    assert text_of(ups) == "part-1 part-2 part-3 part-4 "
    assert resp["result"] == {"stopReason": "end_turn"}


def test_cancel_of_a_hang_then_next_turn_works(spawn, env_dirs) -> None:
    p = spawn("hermes")
    sid = start_session(p, env_dirs["cwd"], mode="dont_ask")
    req = prompt(p, sid, "[[fake: hang]]")
    p.wait_for(lambda m: m.get("method") == "session/update")
    p.notify("session/cancel", {"sessionId": sid})
    assert p.response(req)["result"]["stopReason"] == "cancelled"
    ups, resp = p.updates_until(prompt(p, sid, "again"))
    assert resp["result"]["stopReason"] == "end_turn" and text_of(ups) == "echo: again"


def test_permission_ask_with_correct_reply_and_cancel(spawn, env_dirs) -> None:
    p = spawn("kimi")
    sid = start_session(p, env_dirs["cwd"], mode="auto")
    req = prompt(p, sid, "[[fake: ask kind=permission]]")
    ask = p.wait_for(lambda m: m.get("method") == "session/request_permission")
    assert isinstance(ask["id"], int) and ask["params"]["sessionId"] == sid
    p.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"outcome": {"outcome": "cancelled"}}})
    p.notify("session/cancel", {"sessionId": sid})
    assert p.response(req)["result"]["stopReason"] == "cancelled"
    recs = wirelog.read_records(env_dirs["log"], flavor="kimi", kind="check")
    assert [c["ok"] for c in wirelog.checks(recs, "interaction_reply")] == [True]
    assert [c["ok"] for c in wirelog.checks(recs, "cancel_after_interaction")] == [True]


def test_wrong_permission_reply_exits_72(spawn, env_dirs) -> None:
    p = spawn("kimi")
    sid = start_session(p, env_dirs["cwd"], mode="auto")
    prompt(p, sid, "[[fake: ask kind=permission]]")
    ask = p.wait_for(lambda m: m.get("method") == "session/request_permission")
    p.send(
        {"jsonrpc": "2.0", "id": ask["id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow-once"}}}
    )
    assert p.wait_exit() == 72
    assert wirelog.read_records(env_dirs["log"], kind="check", name="interaction_reply")[0]["ok"] is False


def test_fs_read_ask_gets_method_not_found_and_completes(spawn, env_dirs) -> None:
    p = spawn("grok")
    sid = start_session(p, env_dirs["cwd"])
    req = prompt(p, sid, "[[fake: ask kind=fs_read; reply text=done]]")
    ask = p.wait_for(lambda m: m.get("method") == "fs/read_text_file")
    p.send({"jsonrpc": "2.0", "id": ask["id"], "error": {"code": -32601, "message": "Method not found"}})
    assert p.response(req)["result"]["stopReason"] == "end_turn"


def test_crash_after_delta_exits_with_code(spawn, env_dirs) -> None:
    p = spawn("kimi")
    sid = start_session(p, env_dirs["cwd"], mode="auto")
    prompt(p, sid, "[[fake: crash code=9 after=delta]]")
    p.wait_for(lambda m: m.get("method") == "session/update")
    assert p.wait_exit() == 9
    assert wirelog.read_records(env_dirs["log"], kind="exit")[-1]["why"] == "crash"


def test_garbage_not_json_then_continue(spawn, env_dirs) -> None:
    p = spawn("grok")
    sid = start_session(p, env_dirs["cwd"])
    req = prompt(p, sid, "[[fake: garbage kind=not_json then=continue; reply text=after]]")
    line = p.wait_for(lambda raw: True, raw=True)
    assert line.startswith(b"fake garbage") and line.endswith(b"\n")
    ups, resp = p.updates_until(req)
    assert resp["result"]["stopReason"] == "end_turn" and text_of(ups) == "after"


def test_load_replays_history_in_a_new_process(spawn, env_dirs) -> None:
    first = spawn("hermes")
    sid = start_session(first, env_dirs["cwd"], mode="dont_ask")
    first.updates_until(prompt(first, sid, "question one [[fake: reply text=answer-one]]"))
    first.close()
    assert first.proc.returncode == 0

    second = spawn("hermes")
    second.call("initialize", {"protocolVersion": 1})
    req = second.request("session/load", {"sessionId": sid, "cwd": str(env_dirs["cwd"]), "mcpServers": []})
    ups, resp = second.updates_until(req)
    assert [u["sessionUpdate"] for u in ups] == ["user_message_chunk", "agent_message_chunk"]
    assert "question one" in ups[0]["content"]["text"] and ups[1]["content"]["text"] == "answer-one"
    assert "error" not in resp
    assert second.call("session/set_mode", {"sessionId": sid, "modeId": "dont_ask"})["result"] == {}
    ups, resp = second.updates_until(prompt(second, sid, "next"))
    assert text_of(ups) == "echo: next"


def test_load_of_unknown_session(spawn, env_dirs) -> None:
    g = spawn("grok")
    g.call("initialize", {"protocolVersion": 1})
    err = g.call("session/load", {"sessionId": "nope", "cwd": str(env_dirs["cwd"]), "mcpServers": []})["error"]
    assert err["code"] == -32002
    h = spawn("hermes")
    h.call("initialize", {"protocolVersion": 1})
    assert h.call("session/load", {"sessionId": "nope", "cwd": str(env_dirs["cwd"]), "mcpServers": []})["result"] == {}
    ups, resp = h.updates_until(prompt(h, "nope", "hello"))
    assert resp["result"]["stopReason"] == "refusal" and ups == []


# ------------------------------------------------------------------------------------------- MCP


@pytest.fixture
def mcp_server():
    server, url = start_mcp_stub()
    yield url
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("sse", [False, True])
def test_mcp_publish_reaches_the_endpoint(spawn, env_dirs, mcp_server, sse: bool) -> None:
    GroupxMcpStub.sse = sse
    p = spawn("kimi")
    sid = start_session(p, env_dirs["cwd"], url=mcp_server, mode="auto")
    ups, resp = p.updates_until(prompt(p, sid, "[[fake: mcp-publish text=hi list=1]]"))
    assert text_of(ups) == "mcp:publish:ok:evt-1"
    assert ups[0]["sessionUpdate"] == "tool_call" and ups[0]["title"] == "groupx/publish"
    assert GroupxMcpStub.calls[0]["name"] == "publish" and GroupxMcpStub.calls[0]["arguments"]["content"] == "hi"
    mcp = wirelog.read_records(env_dirs["log"], kind="mcp")
    assert [r["req"]["method"] for r in mcp] == ["initialize", "notifications/initialized", "tools/list", "tools/call"]
    assert all(r["headers"]["X-GroupX-Binding"] == "bind-ok" for r in mcp)


def test_mcp_binding_override_gives_mismatch(spawn, env_dirs, mcp_server) -> None:
    GroupxMcpStub.sse = False
    p = spawn("grok", {"mcp_binding_override": "bogus"})
    sid = start_session(p, env_dirs["cwd"], url=mcp_server)
    ups, resp = p.updates_until(prompt(p, sid, '[[fake: mcp tool=publish args=\'{"content":"x"}\']]'))
    assert text_of(ups) == "mcp:publish:error:MCP_BINDING_MISMATCH"
    assert resp["result"]["stopReason"] == "end_turn"
    rec = wirelog.read_records(env_dirs["log"], kind="mcp")[0]
    assert rec["status"] == 400 and rec["http_status"] == 400


def test_mcp_without_descriptor(spawn, env_dirs) -> None:
    p = spawn("grok")
    sid = start_session(p, env_dirs["cwd"])
    ups, _resp = p.updates_until(prompt(p, sid, "[[fake: mcp-publish]]"))
    assert text_of(ups) == "mcp:publish:error:no_mcp_config"


# ------------------------------------------------------------------------------ scenario options


def test_set_mode_scenarios(spawn, env_dirs) -> None:
    err = {"code": -32603, "message": "mode locked", "data": {"policyBlocked": True}}
    p = spawn("kimi", {"set_mode_error": err})
    sid = start_session(p, env_dirs["cwd"])
    assert p.call("session/set_mode", {"sessionId": sid, "modeId": "auto"})["error"] == err
    q = spawn("hermes", {"set_mode_null": True, "set_mode_updates": True})
    sid = start_session(q, env_dirs["cwd"])
    ups, resp = q.updates_until(q.request("session/set_mode", {"sessionId": sid, "modeId": "dont_ask"}))
    assert resp["result"] is None and ups == [{"sessionUpdate": "current_mode_update", "currentModeId": "dont_ask"}]


def test_set_mode_permission_is_a_start_time_interaction(spawn, env_dirs) -> None:
    p = spawn("hermes", {"set_mode_permission": True})
    sid = start_session(p, env_dirs["cwd"])
    req = p.request("session/set_mode", {"sessionId": sid, "modeId": "dont_ask"})
    ask = p.wait_for(lambda m: m.get("method") == "session/request_permission")
    p.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"outcome": {"outcome": "cancelled"}}})
    p.notify("session/cancel", {"sessionId": sid})
    assert p.response(req)["result"] == {}
    recs = wirelog.read_records(env_dirs["log"], kind="check")
    assert [c.get("during") for c in wirelog.checks(recs, "interaction_reply") if c["ok"]] == ["set_mode"]
    assert [c["ok"] for c in wirelog.checks(recs, "cancel_after_interaction")] == [True]


@pytest.mark.parametrize(
    ("expect", "reply", "ok"),
    [
        ("error", {"error": {"code": -32601, "message": "Method not found"}}, True),
        ("cancel", {"result": {"action": "cancel"}}, True),
    ],
)
def test_elicitation_ask(spawn, env_dirs, expect: str, reply: dict[str, Any], ok: bool) -> None:
    p = spawn("grok")
    sid = start_session(p, env_dirs["cwd"])
    req = prompt(p, sid, f"[[fake: ask kind=elicitation expect={expect}]]")
    ask = p.wait_for(lambda m: m.get("method") == "elicitation/create")
    p.send({"jsonrpc": "2.0", "id": ask["id"], **reply})
    if expect == "cancel":  # decision-like: the fake waits for session/cancel, then settles cancelled
        p.notify("session/cancel", {"sessionId": sid})
    assert p.response(req)["result"]["stopReason"] == ("cancelled" if expect == "cancel" else "end_turn")
    assert wirelog.read_records(env_dirs["log"], kind="check", name="interaction_reply")[0]["ok"] is ok


def test_permission_after_cancel_race(spawn, env_dirs) -> None:
    p = spawn("kimi")
    sid = start_session(p, env_dirs["cwd"], mode="auto")
    req = prompt(p, sid, "[[fake: reply text=x; ask kind=permission after=cancel_first]]")
    p.wait_for(lambda m: m.get("method") == "session/update")
    p.notify("session/cancel", {"sessionId": sid})
    ask = p.wait_for(lambda m: m.get("method") == "session/request_permission")
    p.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"outcome": {"outcome": "cancelled"}}})
    assert p.response(req)["result"]["stopReason"] == "cancelled"


def test_dup_terminal_and_stop_reason(spawn, env_dirs) -> None:
    p = spawn("grok")
    sid = start_session(p, env_dirs["cwd"])
    req = prompt(p, sid, "[[fake: dup_terminal; stop_reason value=max_tokens]]")
    assert p.response(req)["result"] == {"stopReason": "max_tokens"}
    assert p.response(req)["result"] == {"stopReason": "max_tokens"}


def test_ignore_eof_and_sigterm_with_grandchild(spawn, env_dirs) -> None:
    p = spawn("kimi", {"ignore_eof": True, "ignore_sigterm": True, "spawn_grandchild": True})
    p.call("initialize", {"protocolVersion": 1})
    assert p.proc.stdin is not None
    p.proc.stdin.close()
    wirelog.wait_for_records(env_dirs["log"], kind="eof")
    assert p.proc.poll() is None
    os.killpg(p.proc.pid, signal.SIGTERM)
    wirelog.wait_for_records(env_dirs["log"], kind="signal")
    assert p.proc.poll() is None
    grandchild = wirelog.read_records(env_dirs["log"], kind="spawn")[0]
    assert grandchild["pgid"] == p.proc.pid  # same group as the fake, so a group kill reaches it
    os.killpg(p.proc.pid, signal.SIGKILL)
    assert p.wait_exit() == -signal.SIGKILL


def test_grok_mcp_probe_on_start(spawn, env_dirs, mcp_server) -> None:
    GroupxMcpStub.sse = False
    p = spawn("grok", {"mcp_probe_on_start": True})
    start_session(p, env_dirs["cwd"], url=mcp_server)
    note = p.wait_for(lambda m: m.get("method") == "_x.ai/mcp/servers_updated")
    assert note["params"]["servers"] == [{"name": "groupx", "status": "connected"}]
    assert wirelog.read_records(env_dirs["log"], kind="mcp_probe")[0]["tools"] == ["publish", "send"]

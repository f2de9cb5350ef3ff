"""Drive the fake Codex App Server over real pipes (NATIVE_PROTOCOLS §2, §6.6, §6.10). No Django.

Every wait is a condition with a deadline (reader thread + queue), never a fixed sleep.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents.fakes import wirelog
from agents.fakes.fake_codex import ARGV

from ._support import LineProc, fake_env, start_mcp_stub

UNRESTRICTED = {"approvalPolicy": "never", "sandbox": "danger-full-access"}


class Codex(LineProc):
    """JSON-RPC the way GroupX writes it: no header, string ids ``groupx-<n>``."""

    ids = 0

    def request(self, method: str, params: dict[str, Any]) -> str:
        self.ids += 1
        req_id = f"groupx-{self.ids}"
        self.send({"id": req_id, "method": method, "params": params})
        return req_id

    def response(self, req_id: Any) -> dict[str, Any]:
        return self.wait_for(lambda m: m.get("id") == req_id and "method" not in m)

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.response(self.request(method, params))

    def notification(self, method: str) -> dict[str, Any]:
        return self.wait_for(lambda m: m.get("method") == method and "id" not in m)

    def handshake(self) -> dict[str, Any]:
        init = self.call("initialize", {"clientInfo": {"name": "groupx", "title": "GroupX", "version": "0.1.0"}})
        self.send({"method": "initialized", "params": {}})
        self.call("configRequirements/read", {})
        return init

    def start_thread(self, url: str | None = None, binding: str = "bind-ok") -> str:
        params: dict[str, Any] = dict(UNRESTRICTED)
        if url:
            params["config"] = {"mcp_servers.groupx": {"url": url, "http_headers": {"X-GroupX-Binding": binding}}}
        return self.call("thread/start", params)["result"]["thread"]["id"]

    def turn(self, tid: str, text: str) -> str:
        resp = self.call("turn/start", {"threadId": tid, "input": [{"type": "text", "text": text}]})
        return resp["result"]["turn"]["id"]

    def until_completed(self) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        frames = self.collect_until(lambda m: m.get("method") == "turn/completed")
        return frames, frames[-1]["params"]["turn"]


def text_of(frames: list[dict[str, Any]]) -> str:
    return "".join(f["params"]["delta"] for f in frames if f.get("method") == "item/agentMessage/delta")


def methods(frames: list[dict[str, Any]]) -> list[str]:
    return [f["method"] for f in frames if "method" in f]


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    out = {"log": tmp_path / "logs", "state": tmp_path / "state", "cwd": tmp_path / "work"}
    out["cwd"].mkdir()
    return out


@pytest.fixture
def codex(dirs: dict[str, Path]):
    procs: list[Codex] = []

    def start(scenario: dict[str, Any] | None = None, argv: list[str] | None = None) -> Codex:
        proc = Codex(
            "codex", list(ARGV) if argv is None else argv, fake_env(dirs["log"], dirs["state"], scenario), dirs["cwd"]
        )
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


@pytest.mark.parametrize(
    "argv",
    [
        ["app-server"],
        ["app-server", "--listen", "stdio://"],
        [*ARGV, "--verbose"],
        ["--dangerously-bypass-hook-trust", "app-server"],
    ],
)
def test_wrong_argv_exits_64(codex, dirs, argv: list[str]) -> None:
    p = codex(argv=argv)
    assert p.wait_exit() == 64
    assert "invalid argv" in p.stderr_text()
    assert wirelog.wait_for_records(dirs["log"], kind="exit")[-1]["why"] == "argv"


def test_handshake_and_thread_start_shapes(codex, dirs) -> None:
    p = codex()
    init = p.handshake()
    assert "jsonrpc" not in init and set(init["result"]) == {"userAgent", "codexHome", "platformFamily", "platformOs"}
    assert init["result"]["userAgent"].startswith("groupx/")
    again = p.call("initialize", {"clientInfo": {"name": "groupx"}})
    assert again["error"] == {"code": -32600, "message": "Already initialized"}
    req = p.request(
        "thread/start",
        {
            **UNRESTRICTED,
            "config": {
                "mcp_servers.groupx": {"url": "http://127.0.0.1:9/mcp", "http_headers": {"X-GroupX-Binding": "bind-ok"}}
            },
        },
    )
    result = p.response(req)["result"]
    thread = result["thread"]
    assert thread["cwd"] == str(dirs["cwd"]) and result["cwd"] == str(dirs["cwd"])
    assert thread["sessionId"] == thread["id"] and thread["id"][14] == "7"  # UUIDv7 (C8)
    assert result["sandbox"] == {"type": "dangerFullAccess"} and result["approvalPolicy"] == "never"
    started = p.notification("thread/started")
    assert started["params"]["thread"]["id"] == thread["id"] and isinstance(started["emittedAtMs"], int)
    p.close()
    assert p.proc.returncode == 0
    recs = wirelog.read_records(dirs["log"], flavor="codex")
    assert wirelog.inbound_methods(recs)[:4] == ["initialize", "initialized", "configRequirements/read", "initialize"]
    assert [c["ok"] for c in wirelog.checks(recs, "thread_params")] == [True]
    assert [c["ok"] for c in wirelog.checks(recs, "mcp_binding_present")] == [True]


def test_ordering_rules(codex) -> None:
    p = codex()
    p.call("initialize", {"clientInfo": {"name": "groupx"}})
    assert p.call("thread/start", UNRESTRICTED)["error"]["code"] == -32002  # before `initialized`
    p.send({"method": "initialized"})
    err = p.call("thread/fork", {})["error"]
    assert err["code"] == -32600 and "unknown variant" in err["message"]  # C3


def test_initialized_before_the_reply_exits_65(codex, dirs) -> None:
    p = codex({"initialize_delay_ms": 2000})
    p.request("initialize", {"clientInfo": {"name": "groupx"}})
    p.send({"method": "initialized"})
    assert p.wait_exit() == 65
    assert wirelog.read_records(dirs["log"], kind="check", name="initialized_order")[0]["ok"] is False


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (None, None),
        ("blocked", {"allowedApprovalPolicies": ["on-request"], "allowedSandboxModes": ["workspace-write"]}),
        ("malformed", "nope"),
    ],
)
def test_config_requirements(codex, spec: Any, expected: Any) -> None:
    p = codex({"requirements": spec})
    p.call("initialize", {})
    p.send({"method": "initialized"})
    assert p.call("configRequirements/read", {})["result"]["requirements"] == expected
    q = codex({"requirements": "granular_never"})
    q.call("initialize", {})
    q.send({"method": "initialized"})
    req = q.call("configRequirements/read", {})["result"]["requirements"]
    assert "never" in req["allowedApprovalPolicies"] and req["allowedSandboxModes"] == ["danger-full-access"]


@pytest.mark.parametrize(
    "params",
    [
        {"approvalPolicy": "on-request", "sandbox": "danger-full-access"},
        {"approvalPolicy": "never", "sandbox": "dangerFullAccess"},
        {**UNRESTRICTED, "model": "x"},
        {**UNRESTRICTED, "config": {"mcp_servers.groupx": {"url": "http://h/mcp", "http_headers": {}}}},
        {**UNRESTRICTED, "config": {"mcp_servers.groupx": {"url": "http://h/mcp"}, "model": "x"}},
        {**UNRESTRICTED, "config": {"mcp_servers.groupx": {"command": "/bin/mcp", "args": ["--binding", "b"]}}},
    ],
)
def test_thread_start_validation(codex, params: dict[str, Any]) -> None:
    p = codex()
    p.handshake()
    assert p.call("thread/start", params)["error"]["code"] == -32602


# ---------------------------------------------------------------------------------------- turns


def test_streamed_turn_with_reasoning_tool_and_content(codex) -> None:
    p = codex()
    p.handshake()
    tid = p.start_thread()
    turn_id = p.turn(
        tid, "history [[fake: crash]]\n\n[groupx_current_message]\ngo [[fake: reason n=2; tool; stream n=4 delay_ms=1]]"
    )
    frames, turn = p.until_completed()
    ms = methods(frames)
    assert ms[:4] == ["thread/status/changed", "turn/started", "item/started", "item/completed"]
    assert frames[2]["params"]["item"]["type"] == "userMessage"
    assert ms.count("item/reasoning/summaryTextDelta") == 2 and "item/reasoning/summaryPartAdded" in ms
    tools = [
        f["params"]["item"]
        for f in frames
        if f.get("method", "").startswith("item/") and f["params"].get("item", {}).get("type") == "commandExecution"
    ]
    assert [t["status"] for t in tools] == ["inProgress", "completed"] and tools[1]["exitCode"] == 0
    assert text_of(frames) == "part-1 part-2 part-3 part-4 "
    assert all(f["params"].get("turnId", turn_id) == turn_id for f in frames if "turn" not in f["params"])
    assert all("emittedAtMs" in f and "jsonrpc" not in f for f in frames)
    assert turn["id"] == turn_id and turn["status"] == "completed"
    assert [i["text"] for i in turn["items"] if i["type"] == "agentMessage"] == ["part-1 part-2 part-3 part-4 "]
    assert ms[-2:] == ["thread/status/changed", "turn/completed"]


def test_interrupt_of_a_hang_then_next_turn(codex, dirs) -> None:
    p = codex()
    p.handshake()
    tid = p.start_thread()
    turn_id = p.turn(tid, "[[fake: hang]]")
    p.notification("item/agentMessage/delta")
    req = p.request("turn/interrupt", {"threadId": tid, "turnId": turn_id})
    frames = p.collect_until(lambda m: m.get("method") == "turn/completed")
    assert frames[0] == {"id": req, "result": {}}  # the reply comes before the terminal
    assert frames[-1]["params"]["turn"]["status"] == "interrupted"
    p.turn(tid, "again")
    frames, turn = p.until_completed()
    assert turn["status"] == "completed" and text_of(frames) == "echo: again"
    assert [c["ok"] for c in wirelog.read_records(dirs["log"], kind="check", name="interrupt_turn_id")] == [True]


ASK_REPLIES = {
    "command": ("item/commandExecution/requestApproval", {"result": {"decision": "cancel"}}),
    "network": ("item/commandExecution/requestApproval", {"result": {"decision": "cancel"}}),
    "file": ("item/fileChange/requestApproval", {"result": {"decision": "cancel"}}),
    "permissions": ("item/permissions/requestApproval", {"result": {"permissions": {}}}),
    "user_input": ("item/tool/requestUserInput", {"result": {"answers": {}}}),
    "user_input_legacy": ("tool/requestUserInput", {"result": {"answers": {}}}),
    "elicitation": ("mcpServer/elicitation/request", {"result": {"action": "cancel", "content": None}}),
    "unknown": ("fake/unknown/request", {"error": {"code": -32601, "message": "Unsupported Codex server request"}}),
}


@pytest.mark.parametrize("kind", sorted(ASK_REPLIES))
def test_ask_kinds_accept_groupx_reply(codex, dirs, kind: str) -> None:
    method, reply = ASK_REPLIES[kind]
    p = codex()
    p.handshake()
    tid = p.start_thread()
    turn_id = p.turn(tid, f"[[fake: ask kind={kind}]]")
    ask = p.wait_for(lambda m: m.get("method") == method and "id" in m)
    assert isinstance(ask["id"], int) and ask["params"]["threadId"] == tid
    if kind == "network":
        assert "networkApprovalContext" in ask["params"]
    # GroupX writes the interrupt before the reply (§2.8): the fake accepts either order.
    p.request("turn/interrupt", {"threadId": tid, "turnId": turn_id})
    p.send({"id": ask["id"], **reply})
    frames = p.collect_until(lambda m: m.get("method") == "turn/completed")
    assert "serverRequest/resolved" in methods(frames)
    assert frames[-1]["params"]["turn"]["status"] == "interrupted"
    recs = wirelog.read_records(dirs["log"], kind="check")
    assert [c["ok"] for c in wirelog.checks(recs, "interaction_reply")] == [True]
    assert [c["ok"] for c in wirelog.checks(recs, "cancel_after_interaction")] == [True]


def test_wrong_ask_reply_exits_72(codex, dirs) -> None:
    p = codex()
    p.handshake()
    tid = p.start_thread()
    p.turn(tid, "[[fake: ask kind=command]]")
    ask = p.wait_for(lambda m: m.get("method") == "item/commandExecution/requestApproval")
    p.send({"id": ask["id"], "result": {"decision": "accept"}})
    assert p.wait_exit() == 72
    assert wirelog.read_records(dirs["log"], kind="check", name="interaction_reply")[0]["ok"] is False


def test_ask_during_start(codex, dirs) -> None:
    p = codex({"ask_during_start": "command"})
    p.handshake()
    req = p.request("thread/start", UNRESTRICTED)
    ask = p.wait_for(lambda m: m.get("method") == "item/commandExecution/requestApproval")
    assert not any(isinstance(m, dict) and m.get("id") == req for m in p.seen)  # asked *before* the reply
    p.send({"id": ask["id"], "result": {"decision": "cancel"}})
    assert "thread" in p.response(req)["result"]
    assert wirelog.read_records(dirs["log"], kind="check", name="interaction_reply")[0]["during"] == "thread/start"


def test_error_notice_will_retry_then_completes(codex) -> None:
    p = codex()
    p.handshake()
    tid = p.start_thread()
    p.turn(tid, "[[fake: error_notice will_retry=1; echo]]")
    frames, turn = p.until_completed()
    notice = next(f for f in frames if f.get("method") == "error")
    assert notice["params"]["willRetry"] is True and notice["params"]["error"]["message"].startswith("Reconnecting")
    assert turn["status"] == "completed" and text_of(frames) == "echo: "
    p.turn(tid, "[[fake: fail notice=1 message=boom]]")
    frames, turn = p.until_completed()
    assert next(f for f in frames if f.get("method") == "error")["params"]["willRetry"] is False
    assert turn["status"] == "failed" and turn["error"]["message"] == "boom"


def test_tolerated_extras(codex) -> None:
    p = codex({"noise": True})
    p.handshake()
    tid = p.start_thread()
    first = p.turn(tid, "one")
    p.until_completed()
    turn_id = p.turn(tid, "[[fake: late_old; foreign; noise; fallback_only text=final; dup_terminal]]")
    frames = p.collect_until(lambda m: m.get("method") == "turn/completed" and m["params"]["turn"]["id"] == turn_id)
    terminals = [f["params"]["turn"]["id"] for f in frames if f.get("method") == "turn/completed"]
    assert terminals == [first, turn_id]  # late_old: a stale terminal for the previous turn first
    deltas = [f for f in frames if f.get("method") == "item/agentMessage/delta"]
    assert deltas and all(f["params"]["threadId"] != tid for f in deltas)  # only the foreign item streamed
    done = [
        f["params"]["item"]["text"]
        for f in frames
        if f.get("method") == "item/completed"
        and f["params"]["threadId"] == tid
        and f["params"]["item"]["type"] == "agentMessage"
    ]
    assert done == ["final"]  # fallback_only: text only in the completed item
    assert {"thread/tokenUsage/updated", "account/rateLimits/updated", "warning"} <= set(methods(frames))
    dup = p.wait_for(lambda m: m.get("method") == "turn/completed")
    assert dup["params"]["turn"]["id"] == turn_id  # dup_terminal


def test_crash_after_delta(codex, dirs) -> None:
    p = codex()
    p.handshake()
    tid = p.start_thread()
    p.turn(tid, "[[fake: crash code=9 after=delta]]")
    p.notification("item/agentMessage/delta")
    assert p.wait_exit() == 9
    assert wirelog.read_records(dirs["log"], kind="exit")[-1]["why"] == "crash"


def test_garbage_not_json_then_continue(codex) -> None:
    p = codex()
    p.handshake()
    tid = p.start_thread()
    p.turn(tid, "[[fake: garbage kind=not_json then=continue; reply text=after]]")
    line = p.wait_for(lambda raw: True, raw=True)
    assert line.startswith(b"fake garbage") and line.endswith(b"\n")
    frames, turn = p.until_completed()
    assert text_of(frames) == "after" and turn["status"] == "completed"


def test_terminal_in_response(codex) -> None:
    p = codex({"terminal_in_response": True})
    p.handshake()
    tid = p.start_thread()
    resp = p.call("turn/start", {"threadId": tid, "input": [{"type": "text", "text": "x"}]})
    assert resp["result"]["turn"]["status"] == "completed"


# --------------------------------------------------------------------------------------- resume


def test_resume_in_a_new_process(codex, dirs) -> None:
    first = codex()
    first.handshake()
    empty = first.start_thread()
    tid = first.start_thread()
    first.turn(tid, "question one [[fake: reply text=answer-one]]")
    first.until_completed()
    first.close()

    second = codex({"noise": True})
    second.handshake()
    err = second.call("thread/resume", {"threadId": empty, **UNRESTRICTED})["error"]
    assert err == {"code": -32600, "message": f"no rollout found for thread id {empty}"}  # C2
    req = second.request("thread/resume", {"threadId": tid, **UNRESTRICTED})
    frames = second.collect_until(lambda m: m.get("id") == req)
    assert methods(frames)[0] == "deprecationNotice"
    thread = frames[-1]["result"]["thread"]
    assert thread["id"] == tid and len(thread["turns"]) == 1
    items = thread["turns"][0]["items"]
    assert items[0]["type"] == "userMessage" and items[-1]["text"] == "answer-one"
    second.turn(tid, "next")
    frames, turn = second.until_completed()
    assert text_of(frames) == "echo: next"


def test_resume_without_turns_then_pages_of_the_history(codex) -> None:
    first = codex()
    first.handshake()
    tid = first.start_thread()
    for word in ("one", "two", "three"):
        first.turn(tid, f"question {word} [[fake: reply text=answer-{word}]]")
        first.until_completed()
    first.close()

    second = codex()
    second.handshake()
    resumed = second.call("thread/resume", {"threadId": tid, "excludeTurns": True, **UNRESTRICTED})["result"]
    assert resumed["thread"]["id"] == tid and resumed["thread"]["turns"] == []
    newest = second.call("thread/turns/list", {"threadId": tid, "limit": 2, "itemsView": "notLoaded"})["result"]
    assert [t["items"] for t in newest["data"]] == [[], []] and newest["nextCursor"]
    oldest = second.call(
        "thread/turns/list", {"threadId": tid, "limit": 2, "cursor": newest["nextCursor"], "itemsView": "full"}
    )["result"]
    assert oldest["nextCursor"] is None
    assert oldest["data"][0]["items"][-1]["text"] == "answer-one"


# ------------------------------------------------------------------------------------------ MCP


def test_mcp_publish_round_trip(codex, dirs, mcp_url) -> None:
    from ._support import GroupxMcpStub

    p = codex({"mcp_probe_on_start": True})
    p.handshake()
    tid = p.start_thread(url=mcp_url)
    statuses = [p.notification("mcpServer/startupStatus/updated")["params"]["status"] for _ in range(2)]
    assert statuses == ["starting", "ready"]
    p.turn(tid, "[[fake: mcp-publish text=hi]]")
    frames, _turn = p.until_completed()
    calls = [
        f["params"]["item"]
        for f in frames
        if f.get("method") in ("item/started", "item/completed") and f["params"]["item"]["type"] == "mcpToolCall"
    ]
    assert [c["status"] for c in calls] == ["inProgress", "completed"]
    assert calls[0]["server"] == "groupx" and calls[0]["tool"] == "publish"
    assert calls[1]["result"]["structuredContent"] == {"messageEventId": "evt-1"}
    assert text_of(frames) == "mcp:publish:ok:evt-1"
    assert GroupxMcpStub.calls[-1]["arguments"]["content"] == "hi"
    assert set(GroupxMcpStub.bindings) == {"bind-ok"}


def test_mcp_binding_override(codex, mcp_url) -> None:
    p = codex({"mcp_binding_override": "bogus"})
    p.handshake()
    tid = p.start_thread(url=mcp_url)
    p.turn(tid, '[[fake: mcp tool=publish args=\'{"content":"x"}\']]')
    frames, turn = p.until_completed()
    assert text_of(frames) == "mcp:publish:error:MCP_BINDING_MISMATCH" and turn["status"] == "completed"
    failed = [
        f["params"]["item"]
        for f in frames
        if f.get("method") == "item/completed" and f["params"]["item"]["type"] == "mcpToolCall"
    ]
    assert failed[0]["status"] == "failed"


# ------------------------------------------------------------------------------ startup scenarios


def test_startup_scenarios(codex, dirs) -> None:
    p = codex({"exit_on_start": {"code": 9, "stderr": "boom"}})
    assert p.wait_exit() == 9 and "boom" in p.stderr_text()
    q = codex({"no_initialize_reply": True})
    q.request("initialize", {"clientInfo": {"name": "groupx"}})
    wirelog.wait_for_records(dirs["log"], kind="initialize_unanswered", pid=q.proc.pid)
    r = codex({"thread_cwd": "/somewhere/else"})
    r.handshake()
    result = r.call("thread/start", UNRESTRICTED)["result"]
    assert result["thread"]["cwd"] == "/somewhere/else" and result["cwd"] == "/somewhere/else"


def test_persist_empty_threads_allows_resume(codex) -> None:
    first = codex({"persist_empty_threads": True})
    first.handshake()
    tid = first.start_thread()
    first.close()
    second = codex({"persist_empty_threads": True})
    second.handshake()
    assert second.call("thread/resume", {"threadId": tid, **UNRESTRICTED})["result"]["thread"]["turns"] == []


def test_ignore_cancel_never_settles(codex, dirs) -> None:
    p = codex()
    p.handshake()
    tid = p.start_thread()
    turn_id = p.turn(tid, "[[fake: hang ignore_cancel]]")
    p.notification("item/agentMessage/delta")
    req = p.request("turn/interrupt", {"threadId": tid, "turnId": turn_id})
    assert p.response(req)["result"] == {}
    wirelog.wait_for_records(dirs["log"], kind="turn_abandoned")
    assert not any(isinstance(m, dict) and m.get("method") == "turn/completed" for m in p.seen)

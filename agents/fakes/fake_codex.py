"""Fake ``codex app-server`` over stdio (NATIVE_PROTOCOLS §2, §6.6).

Speaks Codex's JSON-RPC dialect (no ``jsonrpc`` header on output, ``emittedAtMs`` on
notifications, integer server-request ids from 0) closely enough that GroupX's Codex driver cannot
tell it from the real CLI on the paths under test. Shapes follow the real 0.169 transcripts
(recorded by the real-CLI tier, ``tests/realcli``, docs/CONFORMANCE.md) where they differ from the
spec. Behaviour comes
from the scenario (§6.3) and per-turn ``[[fake: …]]`` directives; what the broker sent goes to the
wire log. Stdlib only.

Run through the ``bin/codex`` shim: ``codex --dangerously-bypass-hook-trust app-server --listen stdio://``.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

try:  # imported as agents.fakes.fake_codex (tests)
    from . import _fakecore as core
    from . import _fakemcp as fmcp
    from ._codex_directives import CodexTurn, ask_method, ask_params, check_ask_reply, now_ms, uuid7
except ImportError:  # run through a shim or as a script: agents/fakes itself is on sys.path
    import _fakecore as core  # type: ignore[no-redef]
    import _fakemcp as fmcp  # type: ignore[no-redef]
    from _codex_directives import (  # type: ignore[no-redef]
        CodexTurn,
        ask_method,
        ask_params,
        check_ask_reply,
        now_ms,
        uuid7,
    )

ARGV = ("--dangerously-bypass-hook-trust", "app-server", "--listen", "stdio://")
CLI_VERSION = "0.169.0"  # the version of the real transcripts (GroupX itself targets 0.147)
MODEL = "gpt-fake-codex"
EX_ORDER = 65  # `initialized` before the initialize reply: an ordering bug in the broker (§6.6)
GROUPX_KEY = "mcp_servers.groupx"

BUILTIN_SCENARIO: dict[str, Any] = {
    "default_turn": ["echo"],
    "strict_replies": True,
    "enforce_initialized": True,
    "requirements": None,
    "persist_empty_threads": False,
    "mcp_probe_on_start": False,
    "noise": False,
}
_START_KEYS = {"approvalPolicy", "sandbox", "config", "cwd"}  # cwd: the real spike driver sends it
_RESUME_KEYS = _START_KEYS | {"threadId", "excludeTurns"}
_TURNS_LIST_KEYS = {"threadId", "cursor", "limit", "sortDirection", "itemsView"}


def _turn_view(turn: dict[str, Any], view: str) -> dict[str, Any]:
    """A stored turn as ``thread/turns/list`` shows it: no items, the first and last, or all."""
    items = turn.get("items") if isinstance(turn.get("items"), list) else []
    shown = [] if view == "notLoaded" else items if view == "full" else items[:1] + items[1:][-1:]
    return {**turn, "items": shown, "itemsView": view}


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


@dataclass
class CodexThread:
    id: str
    cwd: str
    mcp: fmcp.McpDescriptor | None
    created_at: int
    turns: list[dict[str, Any]] = field(default_factory=list)
    preview: str = ""
    turn: CodexTurn | None = None
    last_turn_id: str | None = None


class CodexServer:
    def __init__(self, scenario: dict[str, Any], log: core.WireLog):
        self.scenario = scenario
        self.log = log
        self.writer = core.FrameWriter(log)
        self.pending = core.PendingRequests()
        self.store = core.StateStore("codex")
        self.mcp = fmcp.McpClient("codex", log, scenario)
        self.threads: dict[str, CodexThread] = {}
        self.lock = threading.Lock()
        self.strict = core.scenario_bool(scenario, "strict_replies", True)
        self.noise = core.scenario_bool(scenario, "noise")
        self.init_requested = False
        self.init_replied = threading.Event()
        self.initialized = False
        self.client_name = "codex-client"

    # ------------------------------------------------------------------------------ wire out

    def send(self, msg: dict[str, Any]) -> None:
        self.writer.frame(msg)  # Codex leaves the jsonrpc header out (C4)

    def reply(self, req_id: Any, result: Any) -> None:
        self.send({"id": req_id, "result": result})

    def reply_error(self, req_id: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self.send({"id": req_id, "error": error})

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"method": method, "params": params, "emittedAtMs": now_ms()})

    def server_request(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """A server→client request (integer id from 0, C4) and a bounded wait for the reply."""
        req_id, slot = self.pending.new()
        self.send({"id": req_id, "method": method, "params": params})
        reply = slot.wait(float(self.scenario.get("interaction_reply_timeout_ms", 10000)) / 1000.0)
        return reply if reply is None else {**reply, "_request_id": req_id}

    def interaction(self, kind: str, thread_id: str, turn_id: str | None, cwd: str, **extra: Any) -> bool:
        """Send ``ask kind=…``, check the broker's reply (strict → exit 72), announce the
        resolution as the real server does. Returns whether the reply was right."""
        reply = self.server_request(ask_method(kind), ask_params(kind, thread_id, turn_id, cwd))
        ok, why = check_ask_reply(kind, reply)
        request_id = reply.pop("_request_id", None) if reply else None
        self.log.check("interaction_reply", ok, kind=kind, why=why, reply=reply, **extra)
        if not ok and self.strict:
            core.write_stderr(self.log, f"fake: wrong reply to ask kind={kind}: {why}: {json.dumps(reply)}")
            core.exit_now(self.log, core.EX_BAD_REPLY, "bad_interaction_reply", kind=kind)
        if ok:
            self.notify("serverRequest/resolved", {"threadId": thread_id, "requestId": request_id})
        return ok

    # ------------------------------------------------------------------------------- wire in

    def serve(self) -> None:
        for raw in core.stdin_lines():
            self.handle_line(raw)
        core.on_eof(self.log, self.scenario)

    def handle_line(self, raw: bytes) -> None:
        msg, bad = core.decode_line(raw)
        if bad or not isinstance(msg, dict):
            self.log.record("in_bad", reason=bad or "non_object", raw=raw.decode("utf-8", "backslashreplace")[:4000])
            return
        self.log.record("in", msg=msg)
        if "jsonrpc" in msg and msg["jsonrpc"] != "2.0":  # optional on Codex, but must be 2.0 if present
            self.log.check("jsonrpc_header", False, got=msg["jsonrpc"])
        if "method" in msg and "id" in msg:
            self.handle_request(msg)
        elif "method" in msg:
            self.handle_notification(msg)
        elif "id" in msg and ("result" in msg) != ("error" in msg):
            if not self.pending.resolve(msg):
                self.log.check("unmatched_response", False, id=msg.get("id"))
        else:
            self.log.check("inbound_shape", False, msg=msg)

    def handle_request(self, msg: dict[str, Any]) -> None:
        method, req_id = msg["method"], msg["id"]
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        handler = {
            "initialize": self.on_initialize,
            "configRequirements/read": self.on_requirements,
            "thread/start": self.on_thread_start,
            "thread/resume": self.on_thread_resume,
            "thread/turns/list": self.on_turns_list,
            "turn/start": self.on_turn_start,
            "turn/interrupt": self.on_turn_interrupt,
        }.get(method)
        try:
            if (
                method != "initialize"
                and not self.initialized
                and core.scenario_bool(self.scenario, "enforce_initialized", True)
            ):
                # 0.163 did not enforce this (C6); the fake does, to catch ordering bugs.
                self.log.check("not_initialized", False, method=method)
                raise RpcError(-32002, "Not initialized")
            if handler is None:
                code = int(self.scenario.get("unknown_method_code", -32600))
                raise RpcError(code, f"Invalid request: unknown variant `{method}`")  # C3
            handler(req_id, params)
        except RpcError as exc:
            self.reply_error(req_id, exc.code, exc.message, exc.data)

    def handle_notification(self, msg: dict[str, Any]) -> None:
        if msg["method"] != "initialized":
            return  # other client notifications are only logged
        if not self.init_replied.is_set():
            self.log.check("initialized_order", False, why="initialized arrived before the initialize reply")
            core.write_stderr(self.log, "fake: `initialized` arrived before the initialize reply")
            core.exit_now(self.log, EX_ORDER, "initialized_before_reply")
        if self.initialized:
            self.log.check("initialized_once", False, why="initialized sent twice")
        self.initialized = True

    # ---------------------------------------------------------------------------- handshake

    def on_initialize(self, req_id: Any, params: dict[str, Any]) -> None:
        if self.init_requested:
            raise RpcError(-32600, "Already initialized")
        self.init_requested = True
        info = params.get("clientInfo") if isinstance(params.get("clientInfo"), dict) else {}
        self.log.record("client_info", clientInfo=info, capabilities=params.get("capabilities"))
        self.client_name = str(info.get("name") or "codex-client")
        if core.scenario_bool(self.scenario, "no_initialize_reply"):
            self.log.record("initialize_unanswered", requestId=req_id)
            return
        name, version = self.client_name, str(info.get("version") or "0.0.0")
        result = {
            "userAgent": f"{name}/{CLI_VERSION} (Fake Linux; x86_64) fake ({name}; {version})",
            "codexHome": os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex"),
            "platformFamily": "unix",
            "platformOs": "linux",
        }

        def answer() -> None:
            core.sleep_ms(float(self.scenario.get("initialize_delay_ms", 0)))
            self.reply(req_id, result)
            self.init_replied.set()
            if self.noise:
                self.notify(
                    "remoteControl/status/changed",
                    {"status": "disabled", "serverName": "fake", "installationId": str(uuid7()), "environmentId": None},
                )
                self.notify(
                    "configWarning", {"summary": "bubblewrap not found; sandboxing is degraded (fake)", "details": None}
                )

        if float(self.scenario.get("initialize_delay_ms", 0)) > 0:
            # Answer from a worker so an `initialized` sent too early is seen before the reply.
            core.start_worker(self.log, answer, "fake-initialize")
        else:
            answer()

    def on_requirements(self, req_id: Any, _params: dict[str, Any]) -> None:
        spec = self.scenario.get("requirements")
        if spec is None:
            requirements: Any = None
        elif spec == "blocked":
            requirements = {"allowedApprovalPolicies": ["on-request"], "allowedSandboxModes": ["workspace-write"]}
        elif spec == "granular_never":
            requirements = {
                "allowedApprovalPolicies": [{"granular": {"sandbox_approval": True, "rules": True}}, "never"],
                "allowedSandboxModes": ["danger-full-access"],
            }
        elif spec == "malformed":
            requirements = "nope"
        else:
            requirements = spec  # a literal requirements object from the scenario
        self.reply(req_id, {"requirements": requirements, "supportsIndependentSpeedModes": True})

    # ------------------------------------------------------------------------------ threads

    def _validate(self, params: dict[str, Any], resume: bool) -> tuple[str | None, fmcp.McpDescriptor | None]:
        """The fixed unrestricted policy and the groupx MCP override, enforced on the wire (§6.6)."""
        allowed = _RESUME_KEYS if resume else _START_KEYS
        extra = sorted(set(params) - allowed)
        problems = []
        if extra:
            problems.append(f"unexpected param(s) {extra}")
        if params.get("approvalPolicy") != "never":
            problems.append(f'approvalPolicy must be "never", got {params.get("approvalPolicy")!r}')
        if params.get("sandbox") != "danger-full-access":  # kebab case on requests (C7)
            problems.append(f'sandbox must be "danger-full-access", got {params.get("sandbox")!r}')
        cwd = params.get("cwd")
        if cwd is not None and not (isinstance(cwd, str) and os.path.isabs(cwd)):
            problems.append("cwd must be an absolute path")
        desc = None
        if "config" in params:
            desc, why = _groupx_descriptor(params["config"])
            if why:
                problems.append(why)
            self.log.check("mcp_binding_present", desc is not None and not why, config=params["config"])
        self.log.check("thread_params", not problems, problems=problems, resume=resume)
        if problems:
            raise RpcError(-32602, "; ".join(problems))
        return cwd, desc

    def _thread_json(self, th: CodexThread, turns: list[dict[str, Any]]) -> dict[str, Any]:
        cwd = str(self.scenario.get("thread_cwd") or th.cwd)
        day = time.strftime("%Y/%m/%d", time.gmtime(th.created_at))
        return {
            "id": th.id,
            "environments": [{"environmentId": "local", "cwd": cwd, "runtimeWorkspaceRoots": [cwd]}],
            "extra": None,
            "sessionId": th.id,
            "forkedFromId": None,
            "parentThreadId": None,
            "preview": th.preview,
            "ephemeral": False,
            "historyMode": "paginated",
            "modelProvider": "openai",
            "model": MODEL,
            "createdAt": th.created_at,
            "updatedAt": int(time.time()),
            "status": {"type": "idle"},
            "path": os.path.join(self.store.dir, "sessions", day, f"rollout-{th.id}.jsonl"),
            "cwd": cwd,
            "cliVersion": CLI_VERSION,
            "originator": self.client_name,
            "source": "vscode",
            "gitInfo": None,
            "name": None,
            "turns": turns,
        }

    def _thread_result(self, th: CodexThread, turns: list[dict[str, Any]]) -> dict[str, Any]:
        thread = self._thread_json(th, turns)
        return {
            "thread": thread,
            "model": MODEL,
            "modelProvider": "openai",
            "serviceTier": None,
            "cwd": thread["cwd"],
            "runtimeWorkspaceRoots": [thread["cwd"]],
            "instructionSources": [],
            "approvalPolicy": "never",
            "approvalsReviewer": "user",
            "sandbox": {"type": "dangerFullAccess"},
            "activePermissionProfile": None,
            "reasoningEffort": None,
        }

    def persist(self, th: CodexThread) -> None:
        self.store.save(
            th.id,
            {
                "cwd": th.cwd,
                "createdAt": th.created_at,
                "preview": th.preview,
                "turns": th.turns,
                "lastTurnId": th.last_turn_id,
            },
        )

    def on_thread_start(self, req_id: Any, params: dict[str, Any]) -> None:
        cwd, desc = self._validate(params, resume=False)
        th = CodexThread(str(uuid7()), cwd or os.getcwd(), desc, int(time.time()))
        with self.lock:
            self.threads[th.id] = th
        if core.scenario_bool(self.scenario, "persist_empty_threads"):
            self.persist(th)
        kind = self.scenario.get("ask_during_start")
        if kind:
            # A server request before the thread/start reply poisons the broker's start (§6.9 #20);
            # from a worker, because the main thread has to read the broker's answer.
            def ask_then_reply() -> None:
                self.interaction(str(kind), th.id, None, th.cwd, during="thread/start")
                self._finish_setup(req_id, th, started=True)

            core.start_worker(self.log, ask_then_reply, "fake-ask-during-start")
            return
        self._finish_setup(req_id, th, started=True)

    def on_thread_resume(self, req_id: Any, params: dict[str, Any]) -> None:
        tid = params.get("threadId")
        if not isinstance(tid, str) or not tid:
            raise RpcError(-32602, "missing field `threadId`")
        cwd, desc = self._validate(params, resume=True)
        th = self.threads.get(tid)
        data = self.store.load(tid) if th is None else None
        if (th is None and data is None) or (
            th is not None and not th.turns and not core.scenario_bool(self.scenario, "persist_empty_threads")
        ):
            raise RpcError(-32600, f"no rollout found for thread id {tid}")  # C2
        if th is None:
            assert data is not None
            th = CodexThread(
                tid,
                str(data.get("cwd") or cwd or os.getcwd()),
                desc,
                int(data.get("createdAt") or 0),
                turns=list(data.get("turns") or []),
                preview=str(data.get("preview") or ""),
                last_turn_id=data.get("lastTurnId"),
            )
            with self.lock:
                self.threads[tid] = th
        th.mcp = desc
        if cwd:
            th.cwd = cwd
        if self.noise:
            self.notify(
                "deprecationNotice",
                {
                    "summary": "Full-history hydration is deprecated for paginated threads; "
                    "use `excludeTurns: true` (fake).",
                    "details": None,
                },
            )
            self.notify("thread/status/changed", {"threadId": tid, "status": {"type": "idle"}})
        self._finish_setup(req_id, th, started=False, exclude_turns=bool(params.get("excludeTurns")))

    def on_turns_list(self, req_id: Any, params: dict[str, Any]) -> None:
        """One page of a loaded thread's turns, newest first unless ``sortDirection: asc``; the
        cursor is opaque to the client (here: the offset of the page's next turn)."""
        extra = sorted(set(params) - _TURNS_LIST_KEYS)
        self.log.check("turns_list_params", not extra, extra=extra)
        th = self.threads.get(str(params.get("threadId")))
        if th is None:
            raise RpcError(-32600, f"thread not loaded: {params.get('threadId')}")
        direction, view = params.get("sortDirection") or "desc", params.get("itemsView") or "summary"
        if direction not in ("asc", "desc") or view not in ("notLoaded", "summary", "full"):
            raise RpcError(-32602, f"invalid sortDirection {direction!r} or itemsView {view!r}")
        limit, cursor = params.get("limit"), params.get("cursor")
        start = int(cursor) if isinstance(cursor, str) and cursor.isdigit() else 0
        size = limit if isinstance(limit, int) and limit > 0 else 25
        ordered = th.turns if direction == "asc" else th.turns[::-1]
        page = ordered[start : start + size]
        self.log.record("turns_list", threadId=th.id, start=start, limit=size, returned=len(page))
        self.reply(
            req_id,
            {
                "data": [_turn_view(turn, view) for turn in page],
                "nextCursor": str(start + size) if start + size < len(ordered) else None,
                "backwardsCursor": str(start) if page else None,
            },
        )

    def _finish_setup(self, req_id: Any, th: CodexThread, started: bool, exclude_turns: bool = False) -> None:
        turns = [] if started or exclude_turns else [{**t, "itemsView": "full"} for t in th.turns]
        self.reply(req_id, self._thread_result(th, turns))
        if started:
            self.notify("thread/started", {"thread": self._thread_json(th, [])})
        if core.scenario_bool(self.scenario, "mcp_probe_on_start") and th.mcp is not None:
            core.start_worker(self.log, lambda: self._probe(th), "fake-mcp-probe")

    def _probe(self, th: CodexThread) -> None:
        """What the real server does at thread setup: connect, list tools, report the status (§2.2)."""
        status = {"threadId": th.id, "name": "groupx", "error": None, "failureReason": None}
        self.notify("mcpServer/startupStatus/updated", {**status, "status": "starting"})
        outcome = self.mcp.probe(th.mcp)
        self.log.record("mcp_probe", ok=outcome.ok, code=outcome.code, tools=outcome.tools)
        if outcome.ok:
            self.notify("mcpServer/startupStatus/updated", {**status, "status": "ready"})
        else:
            error = f"MCP client for `groupx` failed to start: {outcome.code}"
            self.notify("mcpServer/startupStatus/updated", {**status, "status": "failed", "error": error})

    # -------------------------------------------------------------------------------- turns

    def on_turn_start(self, req_id: Any, params: dict[str, Any]) -> None:
        tid = params.get("threadId")
        if not isinstance(tid, str) or not tid:
            raise RpcError(-32602, "missing field `threadId`")
        th = self.threads.get(tid)
        if th is None:
            raise RpcError(-32600, f"thread not found: {tid}")
        items = params.get("input")
        texts = (
            [i.get("text", "") for i in items if isinstance(i, dict) and i.get("type") == "text"]
            if isinstance(items, list)
            else []
        )
        if not texts:
            raise RpcError(-32602, "input must be a non-empty array of text items")
        text = "\n".join(texts)
        directives, message = core.turn_plan(text, self.scenario.get("default_turn"))
        with self.lock:
            if th.turn is not None:
                raise RpcError(-32600, f"a turn is already running on thread {tid}")
            turn = th.turn = CodexTurn(self, th, str(uuid7()), text, directives, message)
        # The rollout exists from the first user message on (C2), so a crash mid-turn can resume.
        th.preview = th.preview or text[:80]
        th.turns.append(turn.record("inProgress"))
        self.persist(th)
        self.log.record(
            "turn",
            requestId=req_id,
            threadId=tid,
            turnId=turn.id,
            directives=[{"name": d.name, **d.params} for d in directives],
        )
        if self.noise:
            self.notify("warning", {"threadId": tid, "message": f"Model metadata for `{MODEL}` not found (fake)."})
        if core.scenario_bool(self.scenario, "terminal_in_response"):
            # C10: the turn/start reply is already terminal; nothing else follows.
            turn.ctl.try_settle()
            self.end_turn(turn, "completed")
            self.reply(req_id, {"turn": turn.turn_json("completed", [], "notLoaded")})
            return
        self.reply(req_id, {"turn": turn.turn_json("inProgress", [], "notLoaded", started=False)})
        core.start_worker(
            self.log, turn.run, f"fake-turn-{turn.id[:8]}", on_error=lambda _tb: turn.fail("fake internal error")
        )

    def end_turn(self, turn: CodexTurn, status: str) -> None:
        """Before the terminal goes out: persist the turn (a new process may resume right after)
        and free the thread so an immediately following turn/start is not refused as busy."""
        th = turn.thread
        th.turns = [turn.record(status) if t.get("id") == turn.id else t for t in th.turns]
        th.last_turn_id = turn.id
        self.persist(th)
        with self.lock:
            if th.turn is turn:
                th.turn = None

    def on_turn_interrupt(self, req_id: Any, params: dict[str, Any]) -> None:
        th = self.threads.get(str(params.get("threadId")))
        turn = th.turn if th is not None else None
        # The reply goes out first, as on the real server (codex-interrupt.jsonl): {} then the terminal.
        self.reply(req_id, {})
        if turn is None:
            self.log.record("interrupt_idle", params=params)
            return
        self.log.check("interrupt_turn_id", params.get("turnId") == turn.id, got=params.get("turnId"), want=turn.id)
        count = turn.ctl.request_cancel()
        if count > 1:
            self.log.check("interrupt_once", False, count=count, turnId=turn.id)


def _groupx_descriptor(config: Any) -> tuple[fmcp.McpDescriptor | None, str | None]:
    """``config`` must hold exactly the dotted key ``mcp_servers.groupx`` (§2.2): HTTP
    ``{url, http_headers{X-GroupX-Binding}}`` or stdio ``{command, args[--binding-id, id]}``."""
    if not isinstance(config, dict) or set(config) != {GROUPX_KEY}:
        keys = sorted(config) if isinstance(config, dict) else type(config).__name__
        return None, f"config must hold exactly {GROUPX_KEY!r}, got {keys}"
    entry = config[GROUPX_KEY]
    desc = fmcp.McpDescriptor.from_entry(entry)
    if desc is None:
        return None, f"{GROUPX_KEY} must be {{url, http_headers}} or {{command, args}}"
    if desc.transport == "http":
        headers = entry.get("http_headers")
        if not isinstance(headers, dict) or not headers.get(fmcp.BINDING_HEADER):
            return desc, f"{GROUPX_KEY}.http_headers must carry {fmcp.BINDING_HEADER}"
    elif "--binding-id" not in desc.args:  # Codex's stdio flag is --binding-id (X3)
        return desc, f"{GROUPX_KEY}.args must carry --binding-id <id>"
    return desc, None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    core.answer_version(argv, "codex")
    log = core.WireLog("codex")
    if tuple(argv) != ARGV:
        core.log_start(log, None, argv=argv)
        core.write_stderr(log, f"invalid argv: {shlex.join(argv)}")
        core.exit_now(log, core.EX_USAGE, "argv")
    try:
        scenario = core.load_scenario("codex", BUILTIN_SCENARIO)
    except core.ScenarioError as exc:
        core.log_start(log, None, argv=argv)
        core.write_stderr(log, f"fake: bad scenario: {exc}")
        core.exit_now(log, core.EX_CONFIG, "scenario", error=str(exc))
    core.log_start(log, scenario, argv=argv)
    core.install_process_options(log, scenario)
    core.startup_common(log, scenario)
    CodexServer(scenario, log).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())

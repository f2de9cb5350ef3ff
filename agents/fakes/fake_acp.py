"""Fake ACP v1 agent: Grok, Kimi, Hermes or generic (NATIVE_PROTOCOLS §3, §6.7).

Speaks newline-delimited JSON-RPC 2.0 on stdio closely enough that GroupX's ACP driver cannot
tell it from the real CLIs on the paths under test. The flavour comes from the exact argv,
behaviour from the scenario (§6.3) and per-turn ``[[fake: …]]`` directives (§6.4); what the
broker sent is written to the wire log. Stdlib only.

Run through the ``bin/grok|kimi|hermes`` shims, or ``python3 fake_acp.py --flavor generic``.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

try:  # imported as agents.fakes.fake_acp (tests)
    from . import _fakecore as core
    from . import _fakemcp as fmcp
    from ._acp_directives import AcpTurn, check_interaction_reply, interaction_params
except ImportError:  # run through a shim or as a script: agents/fakes itself is on sys.path
    import _fakecore as core  # type: ignore[no-redef]
    import _fakemcp as fmcp  # type: ignore[no-redef]
    from _acp_directives import AcpTurn, check_interaction_reply, interaction_params  # type: ignore[no-redef]

GROK_ARGV = (
    "--no-auto-update",
    "--permission-mode",
    "bypassPermissions",
    "--sandbox",
    "off",
    "--no-plan",
    "agent",
    "stdio",
)
ARGV_FLAVORS = {GROK_ARGV: "grok", ("acp",): "kimi", ("--yolo", "acp"): "hermes", ("--flavor", "generic"): "generic"}

_PROMPT_CAPS = {"image": True, "audio": False, "embeddedContext": True}
_HERMES_MODES = [
    {"id": "default", "name": "Default", "description": "Ask before edits."},
    {
        "id": "accept_edits",
        "name": "Accept Edits",
        "description": "Auto-allow workspace and /tmp edits; still asks for sensitive paths.",
    },
    {
        "id": "dont_ask",
        "name": "Don't Ask",
        "description": "Auto-allow file edits for this session except sensitive paths.",
    },
]
_KIMI_MODES = [  # "auto" is assumed (§6.7): GroupX sets it, the 1.51 probe only showed "default"
    {"id": "default", "name": "Default", "description": "The default mode."},
    {"id": "auto", "name": "Auto", "description": "Auto-approve all actions."},
]

# Per-flavour defaults from §6.7 and the real transcripts; agent_capabilities, agent_info and
# auth_methods can be replaced by scenario keys of the same name.
FLAVOR_DEFAULTS: dict[str, dict[str, Any]] = {
    "grok": {
        "agent_info": None,
        "meta": {"agentVersion": "0.2.111"},
        "agent_capabilities": {
            "loadSession": True,
            "promptCapabilities": _PROMPT_CAPS,
            "mcpCapabilities": {"http": True, "sse": True},
            "sessionCapabilities": {},
        },
        "auth_methods": [{"id": "login", "name": "Log in with your xAI account"}],  # [assumed]
        "modes": None,
        "models": None,
        "required_mode": None,
        "message_ids": True,
        "usage": False,
        "tool_id_style": "grok",
    },
    "kimi": {
        "agent_info": {"name": "Kimi Code CLI", "version": "2.1.0"},
        "meta": None,
        "agent_capabilities": {
            "loadSession": True,
            "promptCapabilities": _PROMPT_CAPS,
            "mcpCapabilities": {"http": True, "sse": True},
            "sessionCapabilities": {
                "list": {},
                "resume": {},
                "close": {},
                "delete": {},
                "fork": {},
                "additionalDirectories": {},
            },
        },
        "auth_methods": [
            {
                "id": "login",
                "name": "Login with Kimi account",
                "description": "Run `kimi login` command in the terminal, then follow the instructions.",
            }
        ],
        "modes": _KIMI_MODES,
        "models": {"availableModels": [{"modelId": "kimi-code", "name": "Kimi Code"}], "currentModelId": "kimi-code"},
        "required_mode": "auto",
        "message_ids": True,
        "usage": False,
        "tool_id_style": "kimi",
    },
    "hermes": {
        "agent_info": {"name": "hermes-agent", "version": "0.19.0"},
        "meta": None,
        "agent_capabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": True},
            "sessionCapabilities": {"fork": {}, "list": {}, "resume": {}},
        },
        "auth_methods": [
            {
                "id": "custom",
                "name": "custom runtime credentials",
                "description": "Authenticate Hermes using the currently configured custom runtime credentials.",
            }
        ],
        "modes": _HERMES_MODES,
        "models": {
            "availableModels": [
                {
                    "modelId": "custom:fake-model",
                    "name": "fake-model",
                    "description": "Provider: Custom endpoint • current",
                }
            ],
            "currentModelId": "custom:fake-model",
        },
        # Real Hermes 0.19 chunks carry no messageId and prompt results carry usage (transcripts).
        "required_mode": "dont_ask",
        "message_ids": False,
        "usage": True,
        "tool_id_style": "hermes",
    },
    "generic": {
        "agent_info": {"name": "groupx-fake-acp", "version": "0.0.0"},
        "meta": None,
        "agent_capabilities": {
            "loadSession": True,
            "promptCapabilities": {},
            "mcpCapabilities": {"http": True, "sse": False},
            "sessionCapabilities": {"close": {}},
        },
        "auth_methods": [],
        "modes": None,
        "models": None,
        "required_mode": None,
        "message_ids": True,
        "usage": False,
        "tool_id_style": "generic",
    },
}

BUILTIN_SCENARIO: dict[str, Any] = {
    "default_turn": ["echo"],
    "strict_replies": True,
    "require_jsonrpc": True,
    "replay_on_load": True,
    "persist_empty_sessions": True,
    "mcp_probe_on_start": False,
    "noise": False,
}
_HERMES_COMMANDS = [
    {"name": n, "description": d}
    for n, d in (
        ("help", "List available commands"),
        ("model", "Show current model and provider, or switch models"),
        ("tools", "List available tools with descriptions"),
        ("reset", "Clear conversation history"),
    )
]
_KIMI_COMMANDS = [
    {"name": n, "description": d}
    for n, d in (
        ("init", "Analyze the codebase and generate an `AGENTS.md` file"),
        ("compact", "Compact the context"),
        ("clear", "Clear the context"),
        ("yolo", "Toggle YOLO mode (auto-approve all actions)"),
    )
]


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


@dataclass
class AcpSession:
    sid: str
    cwd: str
    mcp: fmcp.McpDescriptor | None
    mode: str | None
    history: list[dict[str, str]] = field(default_factory=list)
    refusal: bool = False  # Hermes loaded an unknown id (A3): every prompt ends with "refusal"
    turn: AcpTurn | None = None
    cancel_seen: threading.Event = field(default_factory=threading.Event)


class AcpAgent:
    def __init__(self, flavor: str, scenario: dict[str, Any], log: core.WireLog):
        self.flavor = flavor
        self.scenario = scenario
        self.log = log
        self.fd = FLAVOR_DEFAULTS[flavor]
        self.writer = core.FrameWriter(log)
        self.pending = core.PendingRequests()
        self.store = core.StateStore(flavor)
        self.mcp = fmcp.McpClient(flavor, log, scenario)
        self.sessions: dict[str, AcpSession] = {}
        self.lock = threading.Lock()
        caps = scenario["agent_capabilities"] if "agent_capabilities" in scenario else self.fd["agent_capabilities"]
        self.caps = core.deep_merge(caps or {}, scenario.get("agent_capabilities_patch") or {})
        self.strict = core.scenario_bool(scenario, "strict_replies", True)
        self.noise = core.scenario_bool(scenario, "noise")
        self.prompts = 0  # prompts planned so far: the index into scenario.default_turns

    # ------------------------------------------------------------------------------ wire out

    def send(self, msg: dict[str, Any]) -> None:
        self.writer.frame({"jsonrpc": "2.0", **msg})

    def reply(self, req_id: Any, result: Any) -> None:
        self.send({"id": req_id, "result": result})

    def reply_error(self, req_id: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self.send({"id": req_id, "error": error})

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        self.send({"method": "session/update", "params": {"sessionId": session_id, "update": update}})

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """Send an agent→client request and wait (bounded) for the broker's reply."""
        req_id, slot = self.pending.new()
        self.send({"id": req_id, "method": method, "params": params})
        return slot.wait(float(self.scenario.get("interaction_reply_timeout_ms", 10000)) / 1000.0)

    def log_interaction(self, kind: str, ok: bool, why: str, reply: Any, **extra: Any) -> None:
        self.log.check("interaction_reply", ok, kind=kind, why=why, reply=reply, **extra)
        if not ok and self.strict:
            core.write_stderr(self.log, f"fake: wrong reply to ask kind={kind}: {why}: {json.dumps(reply)}")
            core.exit_now(self.log, core.EX_BAD_REPLY, "bad_interaction_reply", kind=kind)

    # ------------------------------------------------------------------------------ wire in

    def serve(self) -> None:
        for raw in core.stdin_lines():
            self.handle_line(raw)
        core.on_eof(self.log, self.scenario)

    def handle_line(self, raw: bytes) -> None:
        msg, bad = core.decode_line(raw)
        if bad:
            # Python-SDK agents skip unparsable lines (X7); log them for the test to see.
            self.log.record("in_bad", reason=bad, raw=raw.decode("utf-8", "backslashreplace")[:4000])
            return
        if not isinstance(msg, dict):
            self.log.record("in_bad", reason="non_object", raw=raw.decode("utf-8", "replace")[:4000])
            return
        if core.scenario_bool(self.scenario, "require_jsonrpc", True) and msg.get("jsonrpc") != "2.0":
            self.log.record("in_bad", reason="missing_jsonrpc", raw=raw.decode("utf-8", "replace")[:4000])
            if "method" in msg and "id" in msg:
                self.reply_error(msg["id"], -32600, "Invalid Request")
            return
        self.log.record("in", msg=msg)
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
            "session/new": self.on_new,
            "session/load": self.on_load,
            "session/set_mode": self.on_set_mode,
            "session/prompt": self.on_prompt,
            "session/close": self.on_close,
        }.get(method)
        try:
            if handler is None:
                raise RpcError(-32601, "Method not found", {"method": method})
            handler(req_id, params)
        except RpcError as exc:
            self.reply_error(req_id, exc.code, exc.message, exc.data)

    def handle_notification(self, msg: dict[str, Any]) -> None:
        method = msg["method"]
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        if method == "initialized":
            self.log.check("no_initialized", False, why="ACP clients must not send initialized")
        elif method == "session/cancel":
            self.on_cancel(params)
        # Anything else (including _-prefixed extensions) is only logged, as real agents do.

    # ---------------------------------------------------------------------------- handshake

    def on_initialize(self, req_id: Any, params: dict[str, Any]) -> None:
        core.sleep_ms(float(self.scenario.get("initialize_delay_ms", 0)))
        core.wait_for_file(self.scenario.get("initialize_wait_for_file"))
        version = params.get("protocolVersion")
        self.log.check(
            "protocol_version",
            version == 1,
            got=version,
            clientCapabilities=params.get("clientCapabilities"),
            clientInfo=params.get("clientInfo"),
        )
        result: dict[str, Any] = {
            "protocolVersion": self.scenario.get("protocol_version", 1),
            "agentCapabilities": self.caps,
        }
        info = self.scenario["agent_info"] if "agent_info" in self.scenario else self.fd["agent_info"]
        if info is not None:
            result["agentInfo"] = info
        result["authMethods"] = self.scenario.get("auth_methods", self.fd["auth_methods"])
        if self.fd["meta"]:
            result["_meta"] = self.fd["meta"]
        self.reply(req_id, result)
        if self.noise and self.flavor == "grok":
            self.send({"method": "_x.ai/mcp/servers_updated", "params": {"servers": []}})

    def _session_params(self, params: dict[str, Any]) -> tuple[str, fmcp.McpDescriptor | None]:
        cwd, servers = params.get("cwd"), params.get("mcpServers")
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            raise RpcError(-32602, "Invalid params", {"cwd": "must be an absolute path"})
        if not isinstance(servers, list):
            raise RpcError(-32602, "Invalid params", {"mcpServers": "must be an array"})
        mcaps = self.caps.get("mcpCapabilities") or {}
        groupx = None
        for entry in servers:
            if not isinstance(entry, dict):
                raise RpcError(-32602, "Invalid params", {"mcpServers": "entries must be objects"})
            kind = entry.get("type")
            # Hermes omits mcpCapabilities yet reads HTTP descriptors (§3.8).
            if kind in ("http", "sse") and not mcaps.get(kind) and self.flavor != "hermes":
                raise RpcError(-32602, "Invalid params", {"mcpServers": f"{kind} transport not supported"})
            if entry.get("name") == "groupx":
                groupx = fmcp.McpDescriptor.from_entry(entry)
                self.log.check("mcp_binding_present", bool(groupx and groupx.binding()), entry=entry)
        return cwd, groupx

    def _auth_check(self) -> None:
        if core.scenario_bool(self.scenario, "auth_required"):
            raise RpcError(-32000, "Authentication required")

    def _session_extras(self, sid: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.fd["modes"]:
            out["modes"] = {"availableModes": self.fd["modes"], "currentModeId": "default"}
        if self.fd["models"]:
            out["models"] = self.fd["models"]
        if self.flavor == "hermes":
            out["_meta"] = {
                "hermes": {
                    "sessionProvenance": {
                        "acpSessionId": sid,
                        "currentHermesSessionId": sid,
                        "rootHermesSessionId": sid,
                        "parentHermesSessionId": None,
                        "sessionKind": "root",
                        "compressionDepth": 0,
                    }
                }
            }
        return out

    def persist(self, session: AcpSession) -> None:
        self.store.save(session.sid, {"flavor": self.flavor, "cwd": session.cwd, "history": session.history})

    def on_new(self, req_id: Any, params: dict[str, Any]) -> None:
        self._auth_check()
        err = self.scenario.get("session_new_error")
        if err:
            spec = err if isinstance(err, dict) else {}
            raise RpcError(int(spec.get("code", -32603)), str(spec.get("message", "Internal error")), spec.get("data"))
        cwd, desc = self._session_params(params)
        session = AcpSession(str(uuid.uuid4()), cwd, desc, "default" if self.fd["modes"] else None)
        with self.lock:
            self.sessions[session.sid] = session
        if core.scenario_bool(self.scenario, "persist_empty_sessions", True):
            self.persist(session)
        self.reply(req_id, {"sessionId": session.sid, **self._session_extras(session.sid)})
        self._after_setup(session)

    def on_load(self, req_id: Any, params: dict[str, Any]) -> None:
        if not self.caps.get("loadSession"):
            raise RpcError(-32601, "Method not found", {"method": "session/load"})
        self._auth_check()
        sid = params.get("sessionId")
        cwd, desc = self._session_params(params)
        session = self.sessions.get(sid) if isinstance(sid, str) else None
        data = self.store.load(sid) if isinstance(sid, str) and session is None else None
        if session is None and data is None:
            if self.flavor != "hermes":
                raise RpcError(-32002, "Session not found", {"sessionId": sid})
            # Hermes (A3): success for an unknown id; the failure only shows at prompt time.
            with self.lock:
                self.sessions[str(sid)] = AcpSession(str(sid), cwd, desc, "default", refusal=True)
            self.log.record("load_unknown", sessionId=sid)
            self.reply(req_id, {})
            return
        if session is None:
            history = [h for h in data.get("history", []) if isinstance(h, dict)] if data else []
            session = AcpSession(str(sid), cwd, desc, None, history=history)
            with self.lock:
                self.sessions[session.sid] = session
        session.cwd, session.mcp = cwd, desc
        session.mode = "default" if self.fd["modes"] else None  # mode must be set again (§3.3)
        if core.scenario_bool(self.scenario, "replay_on_load", True):
            interval = float(self.scenario.get("replay_interval_ms", 0))  # a slow disk or a huge history
            for item in session.history:  # replayed *before* the reply, as ACP requires
                core.sleep_ms(interval)
                kind = "user_message_chunk" if item.get("role") == "user" else "agent_message_chunk"
                self.update(
                    session.sid, {"sessionUpdate": kind, "content": {"type": "text", "text": item.get("text", "")}}
                )
        extras = self._session_extras(session.sid)
        extras.pop("_meta", None)
        self.reply(req_id, None if core.scenario_bool(self.scenario, "load_result_null") else extras)
        self._after_setup(session)

    def _after_setup(self, session: AcpSession) -> None:
        if self.noise and self.flavor == "hermes":
            self.update(
                session.sid, {"sessionUpdate": "available_commands_update", "availableCommands": _HERMES_COMMANDS}
            )
            self.update(session.sid, {"sessionUpdate": "usage_update", "size": 256000, "used": 9088})
        elif self.noise and self.flavor == "kimi":
            self.update(
                session.sid, {"sessionUpdate": "available_commands_update", "availableCommands": _KIMI_COMMANDS}
            )
        if core.scenario_bool(self.scenario, "mcp_probe_on_start"):
            core.start_worker(self.log, lambda: self._probe(session), "fake-mcp-probe")

    def _probe(self, session: AcpSession) -> None:
        outcome = self.mcp.probe(session.mcp)
        self.log.record("mcp_probe", ok=outcome.ok, code=outcome.code, tools=outcome.tools)
        if self.flavor == "grok":
            status = "connected" if outcome.ok else "failed"
            self.send(
                {"method": "_x.ai/mcp/servers_updated", "params": {"servers": [{"name": "groupx", "status": status}]}}
            )

    def on_set_mode(self, req_id: Any, params: dict[str, Any]) -> None:
        sid, mode_id = params.get("sessionId"), params.get("modeId")
        required = self.fd["required_mode"]
        self.log.check(
            "set_mode", mode_id == required if required else self.flavor == "generic", modeId=mode_id, required=required
        )
        err = self.scenario.get("set_mode_error")
        if err:
            spec = err if isinstance(err, dict) else {}
            raise RpcError(int(spec.get("code", -32603)), str(spec.get("message", "Internal error")), spec.get("data"))
        if core.scenario_bool(self.scenario, "set_mode_hang"):
            self.log.record("set_mode_hang", requestId=req_id)
            return
        session = self.sessions.get(sid) if isinstance(sid, str) else None
        if core.scenario_bool(self.scenario, "set_mode_permission"):
            core.start_worker(
                self.log, lambda: self._set_mode_with_permission(req_id, session, mode_id), "fake-set-mode"
            )
            return
        self._apply_mode(req_id, session, mode_id)

    def _set_mode_with_permission(self, req_id: Any, session: AcpSession | None, mode_id: Any) -> None:
        """Start-time interaction (§6.9 #20): ask before answering set_mode."""
        sid, cwd = (session.sid, session.cwd) if session else ("", os.getcwd())
        reply = self.ask("session/request_permission", interaction_params("permission", sid, cwd))
        ok, why = check_interaction_reply("permission", "error", reply)
        self.log_interaction("permission", ok, why, reply, during="set_mode")
        if session is not None:
            got = session.cancel_seen.wait(float(self.scenario.get("interaction_cancel_window_ms", 5000)) / 1000)
            self.log.check("cancel_after_interaction", got, kind="permission", during="set_mode")
        try:
            self._apply_mode(req_id, session, mode_id)
        except RpcError as exc:
            self.reply_error(req_id, exc.code, exc.message, exc.data)

    def _apply_mode(self, req_id: Any, session: AcpSession | None, mode_id: Any) -> None:
        if session is None and self.flavor != "hermes":
            raise RpcError(-32002, "Session not found")
        known = [m["id"] for m in self.fd["modes"] or []]
        if known and mode_id not in known and self.flavor != "hermes":
            raise RpcError(-32602, "Invalid params", {"modeId": f"unknown mode {mode_id!r}"})
        if session is not None:
            # Hermes silently falls back to "default" for an unknown mode (A3).
            session.mode = mode_id if (not known or mode_id in known) else "default"
            if core.scenario_bool(self.scenario, "set_mode_updates"):
                self.update(session.sid, {"sessionUpdate": "current_mode_update", "currentModeId": session.mode})
        self.reply(req_id, None if core.scenario_bool(self.scenario, "set_mode_null") else {})

    # --------------------------------------------------------------------------------- turns

    def on_prompt(self, req_id: Any, params: dict[str, Any]) -> None:
        sid = params.get("sessionId")
        session = self.sessions.get(sid) if isinstance(sid, str) else None
        refusal = {"stopReason": "refusal"}
        if self.fd["usage"]:
            refusal["usage"] = {
                "cachedReadTokens": 0,
                "inputTokens": 0,
                "outputTokens": 0,
                "thoughtTokens": 0,
                "totalTokens": 0,
            }
        if session is None and self.flavor != "hermes":
            raise RpcError(-32002, "Session not found", {"sessionId": sid})
        blocks = params.get("prompt")
        texts = (
            [b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
            if isinstance(blocks, list)
            else []
        )
        if not texts:
            raise RpcError(-32602, "Invalid params", {"prompt": "expected text content blocks"})
        if session is None or session.refusal:
            self.reply(req_id, refusal)
            return
        text = "\n".join(texts)
        # default_turns: one default per prompt, in order (a worker that hangs once, then replies);
        # past its end, default_turn.
        planned = self.scenario.get("default_turns") or []
        default = planned[self.prompts] if self.prompts < len(planned) else self.scenario.get("default_turn")
        self.prompts += 1
        directives, message = core.turn_plan(text, default)
        with self.lock:
            if session.turn is not None:
                raise RpcError(-32000, "A prompt is already running for this session")
            turn = session.turn = AcpTurn(self, session, req_id, text, directives, message)
        self.log.record(
            "turn",
            requestId=req_id,
            sessionId=session.sid,
            directives=[{"name": d.name, **d.params} for d in directives],
        )
        core.start_worker(
            self.log, turn.run, f"fake-turn-{req_id}", on_error=lambda _tb: turn.fail("fake internal error")
        )

    def end_turn(self, turn: AcpTurn) -> None:
        """Before the terminal goes out: persist history (a new process may load it right after)
        and free the session so an immediately following prompt is not refused as busy."""
        session = turn.session
        session.history.append({"role": "user", "text": turn.prompt_text})
        if turn.agent_text():
            session.history.append({"role": "agent", "text": turn.agent_text()})
        self.persist(session)
        with self.lock:
            if session.turn is turn:
                session.turn = None

    def on_cancel(self, params: dict[str, Any]) -> None:
        session = self.sessions.get(str(params.get("sessionId")))
        if session is None:
            self.log.record("cancel_unknown_session", sessionId=params.get("sessionId"))
            return
        session.cancel_seen.set()
        turn = session.turn
        if turn is None:
            self.log.record("cancel_idle", sessionId=session.sid)
            return
        count = turn.ctl.request_cancel()
        if count > 1:  # GroupX sends session/cancel once per turn (§3.5)
            self.log.check("cancel_once", False, count=count, requestId=turn.req_id)

    def on_close(self, req_id: Any, params: dict[str, Any]) -> None:
        advertised = isinstance((self.caps.get("sessionCapabilities") or {}).get("close"), dict)
        self.log.check("session_close_advertised", advertised, sessionId=params.get("sessionId"))
        with self.lock:
            session = self.sessions.pop(str(params.get("sessionId")), None)
        if session is not None and session.turn is not None:
            session.turn.ctl.request_cancel()
        self.reply(req_id, {})

    def mcp_call(self, session: AcpSession, tool: str, args: Any, list_tools: bool) -> fmcp.McpOutcome:
        return self.mcp.call(session.mcp, tool, args, list_tools)


def _kimi_stderr_noise(log: core.WireLog) -> None:
    # Kimi's stderr is JSON log lines (A5); they must never be parsed as protocol.
    for msg in ("kimi code starting", "acp server listening on stdio"):
        core.write_stderr(log, json.dumps({"level": "info", "msg": msg, "pid": os.getpid()}))


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """``prog`` is the shim's name: a ``hermes`` shim launched with kimi's argv is invalid too."""
    argv = list(sys.argv[1:] if argv is None else argv)
    core.answer_version(argv, prog or "acp")
    flavor = ARGV_FLAVORS.get(tuple(argv))
    if flavor is None or (prog is not None and flavor not in (prog, "generic")):
        log = core.WireLog(prog or "acp")
        core.log_start(log, None, argv=argv, flavor=None)
        core.write_stderr(log, f"invalid argv: {shlex.join(argv)}")
        core.exit_now(log, core.EX_USAGE, "argv")
    assert flavor is not None
    log = core.WireLog(flavor)
    try:
        scenario = core.load_scenario(flavor, BUILTIN_SCENARIO)
    except core.ScenarioError as exc:
        core.log_start(log, None, argv=argv, flavor=flavor)
        core.write_stderr(log, f"fake: bad scenario: {exc}")
        core.exit_now(log, core.EX_CONFIG, "scenario", error=str(exc))
    core.log_start(log, scenario, argv=argv, flavor=flavor)
    core.install_process_options(log, scenario)
    if flavor == "kimi" and core.scenario_bool(scenario, "noise"):
        _kimi_stderr_noise(log)
    core.startup_common(log, scenario)
    AcpAgent(flavor, scenario, log).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())

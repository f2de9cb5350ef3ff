"""ACP rendering of the turn directives (NATIVE_PROTOCOLS §6.4, §6.7).

An ``AcpTurn`` runs on the turn worker thread: it renders each directive as ``session/update``
notifications and settles the pending ``session/prompt`` with exactly one terminal, while the
main thread keeps reading stdin so ``session/cancel`` can land mid-stream.
"""

from __future__ import annotations

import os
import threading
import uuid
from typing import Any

try:  # imported as agents.fakes._acp_directives (tests)
    from . import _fakecore as core
except ImportError:  # run through a shim: agents/fakes itself is on sys.path
    import _fakecore as core  # type: ignore[no-redef]


class Cancelled(Exception):
    """The broker's session/cancel arrived; unwind to the cancelled terminal."""


# Interactions (§3.6, §6.7 "ask kind="): request method and the reply GroupX must give.
_PERMISSION_OPTIONS = [
    {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
]
ASK_METHODS = {
    "permission": "session/request_permission",
    "elicitation": "elicitation/create",
    "fs_read": "fs/read_text_file",
    "fs_write": "fs/write_text_file",
    "terminal": "terminal/create",
}


def interaction_params(kind: str, session_id: str, cwd: str, policy_meta: bool = False) -> dict[str, Any]:
    if kind == "permission":
        params: dict[str, Any] = {
            "sessionId": session_id,
            "toolCall": {
                "toolCallId": f"tc-perm-{uuid.uuid4().hex[:8]}",
                "title": "Run rm -rf dist",
                "kind": "execute",
                "status": "pending",
                "rawInput": {"command": "rm -rf dist"},
            },
            "options": _PERMISSION_OPTIONS,
        }
        if policy_meta:
            # Policy-looking fields inside a permission request must never become
            # NATIVE_POLICY_BLOCKED (§3.6); this lets tests prove that.
            params["_meta"] = {"policyBlocked": True, "reason": "managed_policy"}
        return params
    if kind == "elicitation":
        return {
            "sessionId": session_id,
            "mode": "form",
            "message": "Which environment should I deploy to?",
            "requestedSchema": {"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"]},
        }
    if kind == "fs_read":
        return {"sessionId": session_id, "path": os.path.join(cwd, "README.md")}
    if kind == "fs_write":
        return {"sessionId": session_id, "path": os.path.join(cwd, "fake-output.txt"), "content": "fake\n"}
    if kind == "terminal":
        return {"sessionId": session_id, "command": "echo", "args": ["fake"], "cwd": cwd}
    raise core.DirectiveError(f"ask: unknown kind {kind!r}")


def check_interaction_reply(kind: str, expect: str, reply: dict[str, Any] | None) -> tuple[bool, str]:
    """(ok, why) for the broker's answer to an interaction request."""
    if reply is None:
        return False, "no reply"
    error = reply.get("error") if isinstance(reply.get("error"), dict) else None
    result = reply.get("result")
    if kind == "permission":
        outcome = result.get("outcome") if isinstance(result, dict) else None
        if isinstance(outcome, dict) and outcome.get("outcome") == "cancelled" and "optionId" not in outcome:
            return True, "cancelled"
        return False, "expected result.outcome.outcome == 'cancelled' with no optionId"
    method_not_found = error is not None and error.get("code") == -32601
    if kind == "elicitation":
        cancelled = isinstance(result, dict) and result.get("action") == "cancel"
        ok = {"error": method_not_found, "cancel": cancelled, "any": method_not_found or cancelled}.get(expect)
        return bool(ok), f"expect={expect}"
    return method_not_found, "expected error.code == -32601"


class AcpTurn:
    """One ``session/prompt``: the directives, the accumulated text and the single terminal."""

    def __init__(
        self, agent: Any, session: Any, req_id: Any, prompt_text: str, directives: list[core.Directive], message: str
    ):
        self.agent = agent
        self.session = session
        self.req_id = req_id
        self.prompt_text = prompt_text
        self.directives = directives
        self.message = message
        self.ctl = core.TurnControl()
        self.log: core.WireLog = agent.log
        self.scenario: dict[str, Any] = agent.scenario
        self.text_parts: list[str] = []
        self._msg_id: str | None = None
        self._tool_seq = 0
        self._dup_terminal = False

    # ---------------------------------------------------------------------------- driving

    def run(self) -> None:
        try:
            for directive in self.directives:
                if self.ctl.settled:
                    return
                # "ask after=cancel_first" is *meant* to run once the cancel is in (the race it models).
                if not (directive.name == "ask" and directive.get_str("after") == "cancel_first"):
                    self.check_cancel()
                handler = getattr(self, "d_" + directive.name.replace("-", "_"), None)
                if handler is None:
                    self.log.check("unknown_directive", False, directive=directive.name)
                    continue
                handler(directive)
            self.finish("end_turn")
        except Cancelled:
            self.settle_cancelled(0)
        except core.DirectiveError as exc:
            self.log.check("directive_error", False, error=str(exc))
            self.fail(f"fake: bad directive: {exc}")

    def check_cancel(self) -> None:
        if self.ctl.cancel.is_set():
            raise Cancelled

    def pause(self, ms: float) -> None:
        if core.sleep_ms(ms, self.ctl.cancel):
            raise Cancelled

    def wait_forever(self) -> None:
        """``ignore_cancel``: never settle; the broker has to close or kill us."""
        self.log.record("turn_abandoned", requestId=self.req_id)
        while True:
            threading.Event().wait(3600)

    # -------------------------------------------------------------------------- terminals

    def _usage(self) -> dict[str, Any]:
        out = sum(len(p) for p in self.text_parts) // 4
        return {
            "cachedReadTokens": 0,
            "inputTokens": len(self.prompt_text) // 4,
            "outputTokens": out,
            "thoughtTokens": 0,
            "totalTokens": len(self.prompt_text) // 4 + out,
        }

    def finish(self, stop_reason: str) -> None:
        if not self.ctl.try_settle():
            return
        result: dict[str, Any] = {"stopReason": stop_reason}
        if self.agent.fd["usage"]:
            # Hermes puts usage in the prompt result and a usage_update just before it (obs).
            result["usage"] = self._usage()
            if core.scenario_bool(self.scenario, "noise"):
                self.update({"sessionUpdate": "usage_update", "size": 256000, "used": 9000})
        self.agent.end_turn(self)
        self.agent.reply(self.req_id, result)
        if self._dup_terminal:
            self.agent.reply(self.req_id, result)

    def fail(self, message: str, code: int = -32603, data: Any = None) -> None:
        if not self.ctl.try_settle():
            return
        self.agent.end_turn(self)
        self.agent.reply_error(self.req_id, code, message, data)

    def settle_cancelled(self, delay_ms: float) -> None:
        core.sleep_ms(delay_ms)
        self.finish("cancelled")

    def agent_text(self) -> str:
        return "".join(self.text_parts)

    # ---------------------------------------------------------------------------- emitting

    def update(self, update: dict[str, Any], session_id: str | None = None) -> None:
        self.agent.update(session_id or self.session.sid, update)

    def content(self, text: str) -> None:
        if self._msg_id is None:
            self._msg_id = f"msg-{uuid.uuid4().hex[:12]}"
        update: dict[str, Any] = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
        if self.agent.fd["message_ids"]:
            update["messageId"] = self._msg_id
        self.text_parts.append(text)
        self.update(update)

    def thought(self, text: str, msg_id: str) -> None:
        update: dict[str, Any] = {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": text}}
        if self.agent.fd["message_ids"]:
            update["messageId"] = msg_id
        self.update(update)

    def stream(self, pieces: list[str], delay_ms: float) -> None:
        for i, piece in enumerate(pieces):
            if i:
                self.pause(delay_ms)
            self.check_cancel()
            self.content(piece)

    def tool_id(self, explicit: str | None = None) -> str:
        if explicit:
            return explicit
        self._tool_seq += 1
        style = self.agent.fd["tool_id_style"]
        if style == "hermes":
            return f"tc-{uuid.uuid4().hex[:12]}"
        if style == "kimi":
            return f"{uuid.uuid4()}/call_{uuid.uuid4().hex[:8]}"
        return f"call_{self._tool_seq}_{uuid.uuid4().hex[:8]}"

    def tool_start(self, tc_id: str, title: str, kind: str, raw_input: Any) -> None:
        # Text after a tool call is a new assistant message, as on the real agents.
        self._msg_id = None
        self.update(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": tc_id,
                "title": title,
                "kind": kind,
                "status": "pending",
                "rawInput": raw_input,
                "locations": [],
                "content": [],
            }
        )

    def tool_progress(self, tc_id: str, status: str, text: str | None = None) -> None:
        update: dict[str, Any] = {"sessionUpdate": "tool_call_update", "toolCallId": tc_id, "status": status}
        if text is not None:
            update["content"] = [{"type": "content", "content": {"type": "text", "text": text}}]
        self.update(update)

    # -------------------------------------------------------------------------- directives

    def d_echo(self, d: core.Directive) -> None:
        text = f"echo: {self.message}"
        self.stream(core.split_text(text, d.get_int("chunks", 2)), d.get_float("delay_ms", 0))

    def d_reply(self, d: core.Directive) -> None:
        text = d.get_str("text", "ok") or ""
        self.stream(core.split_text(text, d.get_int("chunks", 1)), d.get_float("delay_ms", 0))

    def d_stream(self, d: core.Directive) -> None:
        n = d.get_int("n", 5)
        text = d.get_str("text")
        pieces = core.split_text(text, n) if text else [f"part-{i} " for i in range(1, n + 1)]
        self.stream(pieces, d.get_float("delay_ms", 20))

    def d_reason(self, d: core.Directive) -> None:
        n = d.get_int("n", 1)
        text = d.get_str("text")
        pieces = core.split_text(text, n) if text else [f"thinking-{i} " for i in range(1, n + 1)]
        msg_id = f"th-{uuid.uuid4().hex[:12]}"
        for i, piece in enumerate(pieces):
            if i:
                self.pause(d.get_float("delay_ms", 0))
            self.thought(piece, msg_id)

    def d_tool(self, d: core.Directive) -> None:
        name = d.get_str("name", "shell") or "shell"
        command = d.get_str("command", "echo fake-tool") or ""
        status = d.get_str("status", "completed") or "completed"
        tc_id = self.tool_id(d.get_str("id"))
        self.tool_start(
            tc_id,
            d.get_str("title") or f"{name}: {command}",
            d.get_str("kind", "execute") or "execute",
            {"command": command},
        )
        self.pause(d.get_float("delay_ms", 0))
        self.tool_progress(tc_id, "in_progress")
        self.pause(d.get_float("delay_ms", 0))
        default_out = "fake-tool\n" if status == "completed" else "fake tool failure"
        self.tool_progress(tc_id, status, d.get_str("output", default_out))

    def d_mcp(self, d: core.Directive, tool: str | None = None, args: Any = None) -> None:
        tool = tool or d.get_str("tool", "publish") or "publish"
        args = args if args is not None else d.get_json("args", {})
        tc_id = self.tool_id(d.get_str("id"))
        self.tool_start(tc_id, f"groupx/{tool}", "other", args)
        self.tool_progress(tc_id, "in_progress")
        outcome = self.agent.mcp_call(self.session, tool, args, d.get_bool("list"))
        self.tool_progress(
            tc_id,
            "completed" if outcome.ok else "failed",
            outcome.result_text() if outcome.result else outcome.summary(tool),
        )
        summary = outcome.summary(tool)
        prev = self.agent_text()
        self.content(("\n" if prev and not prev[-1].isspace() else "") + summary)
        expect = d.get_str("expect", "any")
        if expect in ("ok", "error"):
            self.log.check("mcp_expect", outcome.ok == (expect == "ok"), tool=tool, expect=expect, got=summary)
        if not outcome.ok and d.get_bool("fail_turn_on_error"):
            self.fail(f"MCP call failed: {summary}")

    def d_mcp_publish(self, d: core.Directive) -> None:
        text = d.get_str("text", f"hello from {self.agent.flavor}")
        args = {"content": text, "clientCommandId": f"fake-{uuid.uuid4().hex[:12]}"}
        self.d_mcp(d, "publish", args)

    def d_mcp_send(self, d: core.Directive) -> None:
        to = [t for t in (d.get_str("to", "") or "").split(",") if t]
        args = {"to": to, "content": d.get_str("text", "hello"), "clientCommandId": f"fake-{uuid.uuid4().hex[:12]}"}
        self.d_mcp(d, "send", args)

    def d_mcp_ask(self, d: core.Directive) -> None:
        """``mcp-ask to=agent:x text=...``: the demo's one-line agent-to-agent question."""
        to = [t for t in (d.get_str("to", "") or "").split(",") if t]
        args = {
            "to": to,
            "content": d.get_str("text", "what do you think?"),
            "clientCommandId": f"fake-{uuid.uuid4().hex[:12]}",
        }
        self.d_mcp(d, "ask", args)

    def _hang(self, d: core.Directive | None) -> None:
        d = d or core.Directive("hang")
        delay = d.get_float("cancel_delay_ms", float(self.scenario.get("cancel_delay_ms", 0)))
        ignore = d.get_bool("ignore_cancel", core.scenario_bool(self.scenario, "ignore_cancel"))
        self.ctl.cancel.wait()
        if ignore:
            self.wait_forever()
        self.settle_cancelled(delay)

    def d_hang(self, d: core.Directive) -> None:
        if d.get_bool("emit_first", True):
            if d.get_str("cancel_during", "stream") == "tool":
                tc_id = self.tool_id()
                self.tool_start(tc_id, "shell: sleep 600", "execute", {"command": "sleep 600"})
                self.tool_progress(tc_id, "in_progress")
            else:
                self.content(d.get_str("text", "working… ") or "")
        self._hang(d)

    def d_silent(self, d: core.Directive) -> None:
        self._hang(d)

    def d_idle(self, d: core.Directive) -> None:
        self.stream([f"part-{i} " for i in range(1, d.get_int("after", 1) + 1)], d.get_float("delay_ms", 0))
        self._hang(d)

    def d_fail(self, d: core.Directive) -> None:
        self.fail(d.get_str("message", "fake failure") or "", d.get_int("code", -32603))

    def d_crash(self, d: core.Directive) -> None:
        after = d.get_str("after", "none")
        if after == "delta":
            self.content("partial ")
        elif after == "tool":
            self.tool_start(self.tool_id(), "shell: make", "execute", {"command": "make"})
        if d.get_str("signal"):
            core.crash_by_signal(self.log, d.get_str("signal") or "KILL")
        core.exit_now(self.log, d.get_int("code", 7), "crash", after=after)

    def d_garbage(self, d: core.Directive) -> None:
        kind = d.get_str("kind", "not_json") or "not_json"
        harmless = {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": self.session.sid,
                "update": {"sessionUpdate": "usage_update", "size": 256000, "used": 1},
            },
        }
        data = core.garbage_bytes(kind, harmless, jsonrpc=True, size_mb=d.get_float("size_mb", 2))
        self.agent.writer.raw(data)
        default_then = "continue" if kind in core.TOLERATED_GARBAGE else "exit" if kind == "partial_line" else "hang"
        then = d.get_str("then", default_then)
        if then == "exit":
            core.exit_now(self.log, d.get_int("code", 1), "garbage", kind=kind)
        elif then == "hang":
            self._hang(d)

    def d_ask(self, d: core.Directive) -> None:
        kind = d.get_str("kind", "permission") or "permission"
        expect = d.get_str("expect", "error") or "error"
        decision = kind == "permission" or (kind == "elicitation" and expect == "cancel")
        after = d.get_str("after", "cancel" if decision else "complete")
        if after == "cancel_first":
            # GroupX's "permission after cancel" race: ask only once the cancel is in.
            self.ctl.cancel.wait()
        params = interaction_params(kind, self.session.sid, self.session.cwd, d.get_bool("policy_meta"))
        reply = self.agent.ask(ASK_METHODS[kind], params)
        ok, why = check_interaction_reply(kind, expect, reply)
        self.agent.log_interaction(kind, ok, why, reply)
        if after == "cancel_first":
            self.settle_cancelled(d.get_float("cancel_delay_ms", 0))
        elif after == "cancel":
            window = float(self.scenario.get("interaction_cancel_window_ms", 5000)) / 1000.0
            got = self.ctl.cancel.wait(window)
            self.log.check(
                "cancel_after_interaction", got, kind=kind, window_s=window, cancel_count=self.ctl.cancel_count
            )
            self.settle_cancelled(d.get_float("cancel_delay_ms", 0))

    def d_stderr(self, d: core.Directive) -> None:
        core.write_stderr(self.log, d.get_str("text", "fake stderr line") or "")

    def d_noise(self, _d: core.Directive) -> None:
        self.update(
            {
                "sessionUpdate": "plan",
                "entries": [{"content": "Look around", "priority": "medium", "status": "in_progress"}],
            }
        )
        self.update(
            {
                "sessionUpdate": "available_commands_update",
                "availableCommands": [{"name": "help", "description": "List available commands"}],
            }
        )
        self.update({"sessionUpdate": "usage_update", "size": 256000, "used": 9088})
        self.update({"sessionUpdate": "state_change", "state": "thinking"})  # unknown variant
        self.agent.send({"method": "_vendor/ping", "params": {"at": "fake"}})

    def d_foreign(self, d: core.Directive) -> None:
        self.update(
            {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": d.get_str("text", "not for you") or ""},
            },
            session_id=f"foreign-{uuid.uuid4()}",
        )

    def d_stop_reason(self, d: core.Directive) -> None:
        self.finish(d.get_str("value", "max_tokens") or "max_tokens")

    def d_sleep(self, d: core.Directive) -> None:
        self.pause(d.get_float("ms", 100))

    def d_dup_terminal(self, _d: core.Directive) -> None:
        self._dup_terminal = True

    # ------------------------------------------------------------- hostile CLI (D23)

    def d_surrogate(self, d: core.Directive) -> None:
        """A content chunk whose JSON text carries the lone surrogate escape ``\\ud800``."""
        self.content(d.get_str("text", f"before {core.hostile.LONE_SURROGATE} after") or "")

    def d_flood(self, d: core.Directive) -> None:
        """Content chunks of ``chunk`` characters, ``n`` of them (0: until cancelled or killed);
        ``kind=reasoning`` floods thought chunks instead. Not kept in ``text_parts``: the fake's
        own memory stays flat however long it floods."""
        text, n, sent = core.hostile.flood_text(d.get_int("chunk", 65536)), d.get_int("n", 0), 0
        kind = "agent_thought_chunk" if d.get_str("kind") == "reasoning" else "agent_message_chunk"
        update = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
        while n <= 0 or sent < n:
            self.check_cancel()
            self.update(update)
            sent += 1

    def d_close_stdin(self, d: core.Directive) -> None:
        """Close our own stdin (fd 0) and keep running: the broker can no longer write to us.
        ``after_turn``: end the turn normally first, so the session is idle when stdin closes."""
        if d.get_bool("after_turn"):
            self.finish("end_turn")
        core.hostile.close_own_stdin(self.log)
        self.wait_forever()

    def d_wrong_id(self, _d: core.Directive) -> None:
        """Answer the prompt under an id the broker never sent, then never answer the real one."""
        if self.ctl.try_settle():
            self.agent.end_turn(self)
            self.agent.reply(core.hostile.never_sent_id(self.req_id), {"stopReason": "end_turn"})
        self.wait_forever()

    def d_invalid(self, d: core.Directive) -> None:
        raise core.DirectiveError(d.get_str("error", "invalid directive") or "")

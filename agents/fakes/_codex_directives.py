"""Codex App Server rendering of the turn directives (NATIVE_PROTOCOLS §2.6–§2.8, §6.6).

A ``CodexTurn`` runs on the turn worker thread and renders each directive as ``item/*`` and
``turn/*`` notifications in the shapes of the real 0.169 transcripts (items carry
``startedAtMs``/``completedAtMs``, reasoning announces ``summaryPartAdded`` before its deltas, the
completed turn lists its agentMessage items), while the main thread keeps reading stdin so
``turn/interrupt`` lands mid-stream. Also holds the ``ask kind=`` table (§2.8).
"""

from __future__ import annotations

import os
import secrets
import time
import uuid
from typing import Any

try:  # imported as agents.fakes._codex_directives (tests)
    from . import _fakecore as core
    from ._faketurn import Cancelled, TurnBase
except ImportError:  # run through a shim: agents/fakes itself is on sys.path
    import _fakecore as core  # type: ignore[no-redef]
    from _faketurn import Cancelled, TurnBase  # type: ignore[no-redef]


def now_ms() -> int:
    return int(time.time() * 1000)


def uuid7() -> uuid.UUID:
    """Codex ids are UUIDv7 (C8): 48-bit ms timestamp, version 7, RFC 4122 variant."""
    value = (now_ms() & ((1 << 48) - 1)) << 80 | secrets.randbits(80)
    value = (value & ~(0xF << 76)) | (0x7 << 76)
    value = (value & ~(0x3 << 62)) | (0x2 << 62)
    return uuid.UUID(int=value)


def _hex8() -> str:
    return uuid.uuid4().hex[:8]


# --------------------------------------------------------------------------- interactions (§2.8)

_ASK_METHODS = {
    "command": "item/commandExecution/requestApproval",
    "network": "item/commandExecution/requestApproval",
    "file": "item/fileChange/requestApproval",
    "permissions": "item/permissions/requestApproval",
    "user_input": "item/tool/requestUserInput",
    "user_input_legacy": "tool/requestUserInput",
    "elicitation": "mcpServer/elicitation/request",
    "unknown": "fake/unknown/request",
}


def ask_method(kind: str) -> str:
    if kind not in _ASK_METHODS:
        raise core.DirectiveError(f"ask: unknown kind {kind!r} (one of {sorted(_ASK_METHODS)})")
    return _ASK_METHODS[kind]


def ask_params(kind: str, thread_id: str, turn_id: str | None, cwd: str) -> dict[str, Any]:
    base: dict[str, Any] = {"threadId": thread_id, "turnId": turn_id, "itemId": f"call_{_hex8()}"}
    if kind in ("command", "network"):
        params = {
            **base,
            "command": "git push --force",
            "cwd": cwd,
            "reason": "needs approval (fake)",
            "commandActions": [{"type": "unknown", "command": "git push --force"}],
        }
        if kind == "network":
            params["networkApprovalContext"] = {"host": "example.invalid", "protocol": "https"}
        return params
    if kind == "file":
        return {**base, "reason": "write outside the workspace (fake)", "grantRoot": os.path.dirname(cwd) or "/"}
    if kind == "permissions":
        return {
            **base,
            "reason": "needs more permissions (fake)",
            "permissions": {"network": {"enabled": True}, "fileSystem": {"write": ["/etc"]}},
        }
    if kind in ("user_input", "user_input_legacy"):
        return {
            **base,
            "questions": [
                {
                    "id": "q1",
                    "header": "Deploy",
                    "question": "Which environment?",
                    "isOther": False,
                    "options": [{"label": "prod", "description": ""}],
                }
            ],
        }
    if kind == "elicitation":
        return {
            "threadId": thread_id,
            "turnId": turn_id,
            "serverName": "groupx",
            "mode": "form",
            "message": "Which environment should I deploy to?",
            "requestedSchema": {"type": "object", "properties": {"env": {"type": "string"}}},
        }
    return {"threadId": thread_id, "turnId": turn_id}


def check_ask_reply(kind: str, reply: dict[str, Any] | None) -> tuple[bool, str]:
    """(ok, why) for GroupX's answer (§6.6 table)."""
    if reply is None:
        return False, "no reply"
    result = reply.get("result") if isinstance(reply.get("result"), dict) else None
    error = reply.get("error") if isinstance(reply.get("error"), dict) else None
    if kind in ("command", "network", "file"):
        return bool(result and result.get("decision") == "cancel"), "expected result.decision == 'cancel'"
    if kind == "permissions":
        return bool(
            result is not None and isinstance(result.get("permissions"), dict)
        ), "expected result.permissions to be an object"
    if kind in ("user_input", "user_input_legacy"):
        return bool(
            result is not None and isinstance(result.get("answers"), dict)
        ), "expected result.answers to be an object"
    if kind == "elicitation":
        ok = (
            result is not None
            and result.get("action") == "cancel"
            and "content" in result
            and result["content"] is None
        )
        return ok, "expected result == {action: 'cancel', content: null}"
    return bool(error and error.get("code") == -32601), "expected error.code == -32601"


# ------------------------------------------------------------------------------------- the turn


class CodexTurn(TurnBase):
    """One ``turn/start``: its items, the accumulated text and the single ``turn/completed``."""

    def __init__(
        self, server: Any, thread: Any, turn_id: str, prompt_text: str, directives: list[core.Directive], message: str
    ):
        super().__init__(server.log, server.scenario, directives, message, prompt_text)
        self.server = server
        self.thread = thread
        self.id = turn_id
        self.started_at = time.time()
        self.items: list[dict[str, Any]] = []  # completed items, for the rollout and resume
        self.user_item = {
            "type": "userMessage",
            "id": str(uuid7()),
            "clientId": None,
            "content": [{"type": "text", "text": prompt_text, "text_elements": []}],
        }

    # ----------------------------------------------------------------------------- framing

    def note(self, method: str, params: dict[str, Any], thread_id: str | None = None) -> None:
        self.server.notify(method, {"threadId": thread_id or self.thread.id, "turnId": self.id, **params})

    def turn_json(
        self, status: str, items: list[dict[str, Any]], view: str, started: bool = True, error: Any = None
    ) -> dict[str, Any]:
        done = status not in ("inProgress",)
        return {
            "id": self.id,
            "rootTurnId": self.id,
            "items": items,
            "itemsView": view,
            "status": status,
            "error": error,
            "startedAt": int(self.started_at) if started else None,
            "completedAt": int(time.time()) if done else None,
            "durationMs": int((time.time() - self.started_at) * 1000) if done else None,
        }

    def record(self, status: str) -> dict[str, Any]:
        """The turn as stored in the rollout and returned by ``thread/resume``."""
        return self.turn_json(status, [self.user_item, *self.items], "full")

    def item_started(self, item: dict[str, Any], thread_id: str | None = None) -> int:
        ms = now_ms()
        self.server.notify(
            "item/started",
            {
                "item": {**item, "startedAtMs": ms, "completedAtMs": None},
                "threadId": thread_id or self.thread.id,
                "turnId": self.id,
                "startedAtMs": ms,
            },
        )
        return ms

    def item_completed(self, item: dict[str, Any], started_ms: int, thread_id: str | None = None) -> None:
        ms = now_ms()
        full = {**item, "startedAtMs": started_ms, "completedAtMs": ms}
        self.server.notify(
            "item/completed",
            {
                "item": full,
                "threadId": thread_id or self.thread.id,
                "turnId": self.id,
                "contentTokenCount": None,
                "completedAtMs": ms,
            },
        )
        if thread_id is None:
            self.items.append(full)

    # ----------------------------------------------------------------------------- driving

    def run(self) -> None:
        self.note_status("active")
        self.server.notify(
            "turn/started", {"threadId": self.thread.id, "turn": self.turn_json("inProgress", [], "notLoaded")}
        )
        started = self.item_started(self.user_item)
        self.item_completed(self.user_item, started)
        self.items.clear()  # the user item is kept separately (record())
        super().run()

    def note_status(self, kind: str) -> None:
        status: dict[str, Any] = {"type": kind, "activeFlags": []} if kind == "active" else {"type": kind}
        self.server.notify("thread/status/changed", {"threadId": self.thread.id, "status": status})

    def _terminal(self, status: str, error: Any = None) -> None:
        if not self.ctl.try_settle():
            return
        self.server.end_turn(self, status)
        if self.server.noise:
            self.note("thread/tokenUsage/updated", {"tokenUsage": _usage()})
        self.note_status("idle")
        if status == "completed":
            messages = [i for i in self.items if i.get("type") == "agentMessage"]
            turn = self.turn_json(status, messages, "summary")
        else:
            turn = self.turn_json(status, [], "notLoaded", error=error)
        for _ in range(2 if self.dup_terminal else 1):
            self.server.notify("turn/completed", {"threadId": self.thread.id, "turn": turn})

    def complete(self) -> None:
        self._terminal("completed")

    def settle_cancelled(self) -> None:
        self._terminal("interrupted")

    def fail(self, message: str, **extra: Any) -> None:
        self._terminal(
            "failed",
            {
                "message": message,
                "codexErrorInfo": extra.get("info", "other"),
                "additionalDetails": extra.get("details"),
            },
        )

    # ----------------------------------------------------------------------------- emitting

    def open_message(self, thread_id: str | None = None) -> tuple[dict[str, Any], int]:
        item = {
            "type": "agentMessage",
            "moderation": None,
            "id": f"msg_{_hex8()}",
            "text": "",
            "phase": None,
            "memoryCitation": None,
            "delivery": None,
            "questions": None,
        }
        return item, self.item_started(item, thread_id)

    def delta(self, item: dict[str, Any], text: str, thread_id: str | None = None) -> None:
        self.note("item/agentMessage/delta", {"itemId": item["id"], "delta": text}, thread_id)
        if thread_id is None:
            self.text_parts.append(text)

    def content(self, pieces: list[str], delay_ms: float) -> None:
        item, started = self.open_message()
        for i, piece in enumerate(pieces):
            if i:
                self.pause(delay_ms)
            self.check_cancel()
            self.delta(item, piece)
        self.item_completed({**item, "text": "".join(pieces)}, started)

    def command_item(
        self, command: str, status: str, output: str | None, exit_code: int | None, item_id: str | None = None
    ) -> dict[str, Any]:
        return {
            "type": "commandExecution",
            "id": item_id or f"call_{_hex8()}",
            "command": f"/bin/bash -lc {command!r}",
            "cwd": self.thread.cwd,
            "processId": str(os.getpid()),
            "source": "unifiedExecStartup",
            "status": status,
            "commandActions": [{"type": "unknown", "command": command}],
            "aggregatedOutput": output,
            "exitCode": exit_code,
            "durationMs": None if output is None else 1,
        }

    # -------------------------------------------------------------------------- directives

    def d_reason(self, d: core.Directive) -> None:
        raw = d.get_bool("raw")
        item = {"type": "reasoning", "id": f"rs_{_hex8()}", "summary": [], "content": []}
        started = self.item_started(item)
        if not raw:
            self.note("item/reasoning/summaryPartAdded", {"itemId": item["id"], "summaryIndex": 0})
        pieces = self.reason_pieces(d)
        for i, piece in enumerate(pieces):
            if i:
                self.pause(d.get_float("delay_ms", 0))
            if raw:
                self.note("item/reasoning/textDelta", {"itemId": item["id"], "delta": piece, "contentIndex": 0})
            else:
                self.note("item/reasoning/summaryTextDelta", {"itemId": item["id"], "delta": piece, "summaryIndex": 0})
        text = "".join(pieces)
        self.item_completed({**item, "summary": [] if raw else [text], "content": [text] if raw else []}, started)

    def d_tool(self, d: core.Directive) -> None:
        command = d.get_str("command", "echo fake-tool") or ""
        status = d.get_str("status", "completed") or "completed"
        item = self.command_item(command, "inProgress", None, None, d.get_str("id"))
        started = self.item_started(item)
        self.pause(d.get_float("delay_ms", 0))
        output = d.get_str("output", "fake-tool\n" if status == "completed" else "fake tool failure\n")
        done = self.command_item(command, status, output, 0 if status == "completed" else 1, item["id"])
        self.item_completed(done, started)

    def d_mcp(self, d: core.Directive, tool: str | None = None, args: Any = None) -> None:
        tool = tool or d.get_str("tool", "publish") or "publish"
        args = args if args is not None else d.get_json("args", {})
        item = {
            "type": "mcpToolCall",
            "id": d.get_str("id") or f"call_{_hex8()}",
            "server": "groupx",
            "tool": tool,
            "status": "inProgress",
            "arguments": args,
            "appContext": None,
            "mcpAppUi": None,
            "pluginId": None,
            "readOnlyHint": None,
            "result": None,
            "error": None,
            "durationMs": None,
        }
        started = self.item_started(item)
        outcome = self.server.mcp.call(self.thread.mcp, tool, args, d.get_bool("list"))
        summary = outcome.summary(tool)
        done = {**item, "status": "completed" if outcome.ok else "failed", "durationMs": now_ms() - started}
        if outcome.ok:
            res = outcome.result or {}
            done["result"] = {
                "content": res.get("content", []),
                "structuredContent": res.get("structuredContent"),
                "_meta": None,
            }
        else:
            done["error"] = {"message": summary}
        self.item_completed(done, started)
        prev = self.agent_text()
        self.content([("\n" if prev and not prev[-1].isspace() else "") + summary], 0)
        self.mcp_expect(d, tool, outcome)
        if not outcome.ok and d.get_bool("fail_turn_on_error"):
            self.fail(f"MCP call failed: {summary}")

    def d_mcp_publish(self, d: core.Directive) -> None:
        self.d_mcp(d, "publish", self.publish_args(d, "codex"))

    def d_mcp_send(self, d: core.Directive) -> None:
        self.d_mcp(d, "send", self.send_args(d))

    def d_mcp_ask(self, d: core.Directive) -> None:
        self.d_mcp(d, "ask", self.ask_args(d))

    def d_hang(self, d: core.Directive) -> None:
        if d.get_bool("emit_first", True):
            if d.get_str("cancel_during", "stream") == "tool":
                self.item_started(self.command_item("sleep 600", "inProgress", None, None))
            else:
                # Left open: on a real interrupt the agentMessage item never completes (transcript).
                item, _ = self.open_message()
                self.delta(item, d.get_str("text", "working… ") or "")
        self.await_cancel(d)

    def d_idle(self, d: core.Directive) -> None:
        item, _ = self.open_message()
        for i in range(1, d.get_int("after", 1) + 1):
            self.delta(item, f"part-{i} ")
        self.await_cancel(d)

    def d_fail(self, d: core.Directive) -> None:
        message = d.get_str("message", "fake failure") or ""
        if d.get_bool("notice"):
            self._error_notice(message, False)
        self.fail(message)

    def _error_notice(self, message: str, will_retry: bool) -> None:
        self.note(
            "error",
            {
                "error": {
                    "message": message,
                    "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": None}},
                    "additionalDetails": "fake: stream disconnected before completion",
                },
                "willRetry": will_retry,
            },
        )

    def d_error_notice(self, d: core.Directive) -> None:
        """C1: Codex reports transient stream failures it is retrying; the turn carries on."""
        retry = d.get_bool("will_retry", True)
        default = "Reconnecting... 2/5" if retry else "stream disconnected before completion"
        self._error_notice(d.get_str("message", default) or default, retry)

    def d_crash(self, d: core.Directive) -> None:
        after = d.get_str("after", "none")
        if after == "delta":
            item, _ = self.open_message()
            self.delta(item, "partial ")
        elif after == "tool":
            self.item_started(self.command_item("make", "inProgress", None, None))
        self.crash_now(d)

    def flood_open(self) -> None:
        self.flood_item, _ = self.open_message()

    def flood_delta(self, text: str) -> None:
        self.note("item/agentMessage/delta", {"itemId": self.flood_item["id"], "delta": text})

    def d_wrong_id(self, _d: core.Directive) -> None:
        """A response under a request id the broker never sent, then wait for the cancel."""
        self.server.send(
            {
                "id": core.hostile.never_sent_id("groupx-turn-start"),
                "result": {"turn": self.turn_json("completed", [], "summary")},
            }
        )
        self.await_cancel(None)

    def d_garbage(self, d: core.Directive) -> None:
        harmless = {
            "method": "thread/tokenUsage/updated",
            "params": {"threadId": self.thread.id, "turnId": self.id, "tokenUsage": _usage()},
            "emittedAtMs": now_ms(),
        }
        self.garbage(d, self.server.writer, harmless)

    def d_ask(self, d: core.Directive) -> None:
        kind = d.get_str("kind", "command") or "command"
        ask_method(kind)  # validate before anything goes out
        self.server.interaction(kind, self.thread.id, self.id, self.thread.cwd)
        if d.get_str("after", "cancel") != "cancel":
            return
        # GroupX interrupts after answering (it may write the interrupt *before* the reply, so the
        # flag may already be set); the fake settles `interrupted` once it is in.
        window = float(self.scenario.get("interaction_cancel_window_ms", 5000)) / 1000.0
        got = self.ctl.cancel.wait(window)
        self.log.check("cancel_after_interaction", got, kind=kind, window_s=window, cancel_count=self.ctl.cancel_count)
        if got:
            self.cancel_delay_ms = d.get_float("cancel_delay_ms", self.cancel_delay_ms)
            raise Cancelled

    def d_noise(self, _d: core.Directive) -> None:
        """C5: unrelated traffic the real server sends during a turn; all of it must be ignored."""
        self.note("thread/tokenUsage/updated", {"tokenUsage": _usage()})
        self.server.notify(
            "account/rateLimits/updated",
            {"rateLimits": {"limitId": "codex", "primary": None, "secondary": None, "credits": None}},
        )
        self.server.notify(
            "thread/readState/changed",
            {
                "threadId": self.thread.id,
                "readState": {"firstUnread": {"type": "turn", "turnId": self.id}, "revision": str(uuid.uuid4())},
            },
        )
        self.server.notify("warning", {"threadId": self.thread.id, "message": "fake warning"})
        self.server.notify("thread/goal/cleared", {"threadId": self.thread.id})
        self.server.notify("configWarning", {"summary": "fake config warning", "details": None})

    def d_foreign(self, d: core.Directive) -> None:
        other = str(uuid7())
        item, started = self.open_message(other)
        text = d.get_str("text", "not for you") or ""
        self.delta(item, text, other)
        self.item_completed({**item, "text": text}, started, other)

    def d_late_old(self, _d: core.Directive) -> None:
        """A stale ``turn/completed`` for the previous turn of this thread (or a made-up one)."""
        old = self.thread.last_turn_id or str(uuid7())
        turn = {
            "id": old,
            "rootTurnId": old,
            "items": [],
            "itemsView": "notLoaded",
            "status": "completed",
            "error": None,
            "startedAt": int(self.started_at) - 5,
            "completedAt": int(self.started_at) - 1,
            "durationMs": 4000,
        }
        self.server.notify("turn/completed", {"threadId": self.thread.id, "turn": turn})

    def d_fallback_only(self, d: core.Directive) -> None:
        """Final text with no deltas: only the completed agentMessage carries it."""
        text = d.get_str("text") or f"echo: {self.message}"
        item, started = self.open_message()
        self.text_parts.append(text)
        self.item_completed({**item, "text": text}, started)


def _usage() -> dict[str, Any]:
    last = {
        "totalTokens": 110,
        "inputTokens": 100,
        "cachedInputTokens": 0,
        "cacheWriteInputTokens": 0,
        "outputTokens": 10,
        "reasoningOutputTokens": 0,
    }
    return {"total": last, "last": last, "modelContextWindow": 258400}

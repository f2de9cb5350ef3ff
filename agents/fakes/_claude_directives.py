"""Claude Code stream-json rendering of the turn directives (NATIVE_PROTOCOLS §4.5–§4.7, §6.8).

A ``ClaudeTurn`` renders each directive as Anthropic stream events wrapped in ``stream_event``
frames, with the complete ``assistant`` frame for each block placed *before* its
``content_block_stop`` (L7, as in the real transcripts), tool results as ``user`` frames, and
exactly one ``result`` as the terminal. The control ``interrupt`` arrives on the main thread and
sets the cancel flag this worker watches. Also holds the ``ask kind=`` table (§4.7).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

try:  # imported as agents.fakes._claude_directives (tests)
    from . import _fakecore as core
    from ._faketurn import Cancelled, TurnBase
except ImportError:  # run through a shim: agents/fakes itself is on sys.path
    import _fakecore as core  # type: ignore[no-redef]
    from _faketurn import Cancelled, TurnBase  # type: ignore[no-redef]

CLAUDE_VERSION = "2.1.197"  # the version of the real transcripts
MODEL = "claude-sonnet-4-5"
INTERRUPTED = "[Request interrupted by user]"
INTERRUPTED_TOOL = "[Request interrupted by user for tool use]"
NOT_LOGGED_IN = "Not logged in · Please run /login"
INTERACTIVE_KINDS = ("can_use_tool", "elicitation", "request_user_dialog")
OTHER_KINDS = ("hook_callback", "mcp_message", "oauth_token_refresh", "host_auth_token_refresh")
_ZERO_USAGE = {
    "input_tokens": 0,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 0,
    "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
    "service_tier": "standard",
}


def _uid() -> str:
    return str(uuid.uuid4())


def result_frame(
    session_id: str,
    subtype: str,
    is_error: bool,
    *,
    terminal_reason: str | None = None,
    num_turns: int = 1,
    result: str | None = None,
    stop_reason: str | None = None,
    usage: dict[str, Any] | None = None,
    duration_ms: int = 0,
    **extra: Any,
) -> dict[str, Any]:
    frame: dict[str, Any] = {
        "type": "result",
        "subtype": subtype,
        "is_error": is_error,
        "api_error_status": None,
        "duration_ms": duration_ms,
        "duration_api_ms": duration_ms,
        "num_turns": num_turns,
    }
    if result is not None:
        frame["result"] = result
    frame.update(
        {
            "stop_reason": stop_reason,
            "session_id": session_id,
            "total_cost_usd": 0,
            "usage": usage or dict(_ZERO_USAGE),
            "modelUsage": {},
            "permission_denials": [],
        }
    )
    if terminal_reason is not None:
        frame["terminal_reason"] = terminal_reason
    frame.update(fast_mode_state="off", uuid=_uid(), **extra)
    return frame


def ask_payload(kind: str, tool_use_id: str | None) -> dict[str, Any]:
    if kind == "can_use_tool":
        return {
            "tool_name": "Bash",
            "input": {"command": "curl https://example.invalid", "description": "fetch"},
            "tool_use_id": tool_use_id,
            "permission_suggestions": [],
        }
    if kind == "elicitation":
        return {
            "mcp_server_name": "groupx",
            "message": "Which environment should I deploy to?",
            "requested_schema": {"type": "object", "properties": {"env": {"type": "string"}}},
        }
    if kind == "request_user_dialog":
        return {"title": "Confirm", "message": "Proceed with the deployment?", "options": ["yes", "no"]}
    if kind == "hook_callback":
        return {"callback_id": "hook_0", "input": {"hook_event_name": "PreToolUse"}, "tool_use_id": tool_use_id}
    if kind == "mcp_message":
        return {"server_name": "groupx", "message": {"jsonrpc": "2.0", "id": 0, "method": "tools/list"}}
    if kind in OTHER_KINDS:
        return {}
    raise core.DirectiveError(f"ask: unknown kind {kind!r} (one of {INTERACTIVE_KINDS + OTHER_KINDS})")


def check_ask_reply(kind: str, reply: dict[str, Any] | None) -> tuple[bool, str]:
    """Interactive kinds need a success envelope that denies; the rest an error (§4.7)."""
    if reply is None:
        return False, "no reply"
    if kind in INTERACTIVE_KINDS:
        body = reply.get("response") if isinstance(reply.get("response"), dict) else {}
        ok = reply.get("subtype") == "success" and body.get("behavior") == "deny"
        return ok, "expected subtype 'success' with response.behavior == 'deny'"
    return reply.get("subtype") == "error", "expected subtype 'error'"


class ClaudeTurn(TurnBase):
    """One user message: assistant messages made of blocks, tool round trips, one ``result``."""

    def __init__(self, cli: Any, prompt_text: str, directives: list[core.Directive], message: str):
        super().__init__(cli.log, cli.scenario, directives, message, prompt_text)
        self.cli = cli
        self.sid: str = cli.session_id
        self.started = time.time()
        self.msg_id: str | None = None  # the open assistant message
        self.index = 0  # next content block index in the open message
        self.num_turns = 0  # assistant messages (API round trips), as the real num_turns counts
        self.last_text: list[str] = []  # text of the most recent message: the result text
        self.partial: dict[str, Any] | None = None  # an open text block, flushed on interrupt
        self.tool_running = False  # a tool_use is executing: an interrupt then aborts tools
        self.pending_tool: str | None = None  # its id, answered with an "interrupted" tool_result
        self.complete_on_interrupt = core.scenario_bool(self.scenario, "complete_on_interrupt")

    # ----------------------------------------------------------------------------- framing

    def send(self, frame: dict[str, Any]) -> None:
        self.cli.send(frame)

    def event(self, event: dict[str, Any]) -> None:
        self.send(
            {"type": "stream_event", "event": event, "session_id": self.sid, "parent_tool_use_id": None, "uuid": _uid()}
        )

    def message_json(self, msg_id: str, content: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": content,
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": 100,
                "output_tokens": 1,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }

    def assistant(
        self, content: list[dict[str, Any]], msg_id: str | None = None, session_id: str | None = None, **extra: Any
    ) -> None:
        msg = {
            **self.message_json(msg_id or self.msg_id or f"msg_{uuid.uuid4().hex[:12]}", content),
            "context_management": None,
        }
        self.send(
            {
                "type": "assistant",
                "message": msg,
                "parent_tool_use_id": None,
                "session_id": session_id or self.sid,
                "uuid": _uid(),
                **extra,
            }
        )

    def user(self, content: list[dict[str, Any]], **extra: Any) -> None:
        self.send(
            {
                "type": "user",
                "message": {"role": "user", "content": content},
                "parent_tool_use_id": None,
                "session_id": self.sid,
                "uuid": _uid(),
                "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                **extra,
            }
        )

    def open_message(self) -> None:
        if self.msg_id is not None:
            return
        if self.num_turns:  # every further API round trip is announced like the first one
            self.send(self.cli.status_frame())
        self.msg_id = f"msg_{uuid.uuid4().hex[:12]}"
        self.index, self.last_text = 0, []
        self.num_turns += 1
        self.event({"type": "message_start", "message": self.message_json(self.msg_id, [])})

    def close_message(self, stop_reason: str) -> None:
        if self.msg_id is None:
            return
        self.event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 10},
            }
        )
        self.event({"type": "message_stop"})
        self.msg_id = None

    def start_block(self, block: dict[str, Any]) -> int:
        self.open_message()
        idx = self.index
        self.index += 1
        self.event({"type": "content_block_start", "index": idx, "content_block": block})
        return idx

    def finish_block(self, idx: int, block: dict[str, Any]) -> None:
        self.assistant([block])  # before content_block_stop, as the real CLI does (L7)
        self.event({"type": "content_block_stop", "index": idx})

    # ------------------------------------------------------------------------------- content

    def content(self, pieces: list[str], delay_ms: float) -> None:
        idx = self.start_block({"type": "text", "text": ""})
        self.partial = {"index": idx, "text": ""}
        for i, piece in enumerate(pieces):
            if i:
                self.pause(delay_ms)
            self.check_cancel()
            self.text_delta(piece)
        self._flush_partial()

    def text_delta(self, piece: str) -> None:
        assert self.partial is not None
        self.event(
            {
                "type": "content_block_delta",
                "index": self.partial["index"],
                "delta": {"type": "text_delta", "text": piece},
            }
        )
        self.partial["text"] += piece
        self.text_parts.append(piece)

    def _flush_partial(self, stop: bool = True) -> None:
        """Close the open text block: its full ``assistant`` frame, then (normally) the stop."""
        if self.partial is None:
            return
        partial, self.partial = self.partial, None
        self.last_text.append(partial["text"])
        if stop:
            self.finish_block(partial["index"], {"type": "text", "text": partial["text"]})
        else:
            self.assistant([{"type": "text", "text": partial["text"]}])

    def tool_use(self, name: str, tool_input: dict[str, Any]) -> str:
        """Stream a tool_use block and end the message with ``tool_use`` (the tool then runs)."""
        tool_id = f"toolu_fake_{uuid.uuid4().hex[:12]}"
        idx = self.start_block({"type": "tool_use", "id": tool_id, "name": name, "input": {}})
        self.event(
            {
                "type": "content_block_delta",
                "index": idx,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(tool_input)},
            }
        )
        self.finish_block(idx, {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input})
        self.close_message("tool_use")
        self.tool_running = True
        return tool_id

    def tool_result(self, tool_id: str, text: str, is_error: bool | None, extra: Any) -> None:
        self.tool_running = False
        block: dict[str, Any] = {"tool_use_id": tool_id, "type": "tool_result", "content": text}
        if is_error is not None:  # MCP successes carry no is_error in the real transcripts
            block["is_error"] = is_error
        self.user([block], tool_use_result=extra)

    # ----------------------------------------------------------------------------- terminals

    def _result(self, frame: dict[str, Any], is_error: bool) -> None:
        self.cli.end_turn(self, is_error)
        for _ in range(2 if self.dup_terminal else 1):
            self.send(frame)

    def _elapsed_ms(self) -> int:
        return int((time.time() - self.started) * 1000)

    def complete(self) -> None:
        if not self.ctl.try_settle():
            return
        self._flush_partial()
        self.close_message("end_turn")
        usage = {**_ZERO_USAGE, "input_tokens": 100 * max(self.num_turns, 1), "output_tokens": 10 * self.num_turns}
        self._result(
            result_frame(
                self.sid,
                "success",
                False,
                terminal_reason="completed",
                stop_reason="end_turn",
                num_turns=max(self.num_turns, 1),
                result="".join(self.last_text),
                usage=usage,
                duration_ms=self._elapsed_ms(),
            ),
            False,
        )

    def _cancelled(self) -> None:
        if self.complete_on_interrupt:
            # §4.6 race: the turn settles normally and the interrupt's own result is still owed.
            self.cli.stray_owed = True
            self.complete()
            return
        super()._cancelled()

    def settle_cancelled(self) -> None:
        if not self.ctl.try_settle():
            return
        aborted_tools = self.tool_running or self.cancel_during == "tool"
        if self.partial is not None:  # the partial text as one assistant frame, no block stop
            self._flush_partial(stop=False)
        if self.tool_running and self.pending_tool:
            self.tool_result(self.pending_tool, INTERRUPTED_TOOL, True, {"interrupted": True})
        self.user([{"type": "text", "text": INTERRUPTED}])
        reason = "aborted_tools" if aborted_tools else "aborted_streaming"
        self._result(
            result_frame(
                self.sid,
                "error_during_execution",
                True,
                terminal_reason=reason,
                num_turns=self.num_turns + 1,
                duration_ms=self._elapsed_ms(),
                errors=[f"[fake] result_type=user stop_reason=null ({reason})"],
            ),
            True,
        )

    def fail(self, message: str, **extra: Any) -> None:
        if not self.ctl.try_settle():
            return
        self._flush_partial()
        self.close_message("end_turn")
        if extra.get("not_logged_in"):  # L4: "success" subtype, but a failed turn
            self.assistant([{"type": "text", "text": NOT_LOGGED_IN}], error="authentication_failed")
            frame = result_frame(
                self.sid,
                "success",
                True,
                terminal_reason="api_error",
                result=NOT_LOGGED_IN,
                stop_reason="stop_sequence",
                num_turns=1,
            )
        else:
            frame = result_frame(
                self.sid,
                "error_during_execution",
                True,
                terminal_reason="api_error",
                num_turns=max(self.num_turns, 1),
                result=message,
                errors=[message],
                duration_ms=self._elapsed_ms(),
            )
            frame["api_error_status"] = extra.get("status", 529)
        self._result(frame, True)

    # ---------------------------------------------------------------------------- directives

    def d_reason(self, d: core.Directive) -> None:
        idx = self.start_block({"type": "thinking", "thinking": "", "signature": ""})
        pieces = self.reason_pieces(d)
        for i, piece in enumerate(pieces):
            if i:
                self.pause(d.get_float("delay_ms", 0))
            self.event(
                {"type": "content_block_delta", "index": idx, "delta": {"type": "thinking_delta", "thinking": piece}}
            )
        self.event(
            {
                "type": "content_block_delta",
                "index": idx,
                "delta": {"type": "signature_delta", "signature": "fake-signature"},
            }
        )
        self.finish_block(idx, {"type": "thinking", "thinking": "".join(pieces), "signature": "fake-signature"})

    def d_tool(self, d: core.Directive) -> None:
        name = d.get_str("name") or "Bash"
        name = "Bash" if name == "shell" else name
        command = d.get_str("command", "echo fake-tool") or ""
        status = d.get_str("status", "completed") or "completed"
        tool_id = self.tool_use(name, {"command": command, "description": "fake tool"})
        self.pause(d.get_float("delay_ms", 0))
        output = d.get_str("output", "fake-tool" if status == "completed" else "fake tool failure") or ""
        failed = status != "completed"
        self.tool_result(
            tool_id,
            output,
            failed,
            {
                "stdout": "" if failed else output,
                "stderr": output if failed else "",
                "interrupted": False,
                "isImage": False,
            },
        )

    def mcp_round_trip(self, tool: str, args: Any, list_tools: bool = False) -> Any:
        """One MCP tool call as the real CLI shows it: a tool_use block, the call, its tool_result."""
        tool_id = self.tool_use(f"mcp__groupx__{tool}", args if isinstance(args, dict) else {"value": args})
        outcome = self.cli.mcp.call(self.cli.args.mcp, tool, args, list_tools)
        text = outcome.result_text() if outcome.result else outcome.summary(tool)
        extra = {"content": text, "structuredContent": (outcome.result or {}).get("structuredContent")}
        self.tool_result(tool_id, text, None if outcome.ok else True, extra)
        return outcome

    def d_mcp(self, d: core.Directive, tool: str | None = None, args: Any = None) -> None:
        tool = tool or d.get_str("tool", "publish") or "publish"
        args = args if args is not None else d.get_json("args", {})
        outcome = self.mcp_round_trip(tool, args, d.get_bool("list"))
        summary = outcome.summary(tool)
        self.content([summary], 0)
        self.mcp_expect(d, tool, outcome)
        if not outcome.ok and d.get_bool("fail_turn_on_error"):
            self.fail(f"MCP call failed: {summary}")

    def d_mcp_publish(self, d: core.Directive) -> None:
        self.d_mcp(d, "publish", self.publish_args(d, "claude"))

    def d_mcp_send(self, d: core.Directive) -> None:
        self.d_mcp(d, "send", self.send_args(d))

    def d_mcp_ask(self, d: core.Directive) -> None:
        self.d_mcp(d, "ask", self.ask_args(d))

    def d_operator_status(self, d: core.Directive) -> None:
        """The demo room assistant (``bin/demo-assistant``): the operator tools ``roster``, then
        ``worker_ask`` to every enabled agent, then a summary of the answers as the reply."""
        roster = self.mcp_round_trip("roster", {})
        agents = self.enabled_agents(roster)
        if not agents:
            self.content([self.status_summary([], None)], 0)
            return
        asked = self.mcp_round_trip("worker_ask", self.status_ask_args(d, agents))
        self.content([self.status_summary(agents, asked)], 0)

    def d_hang(self, d: core.Directive) -> None:
        self.complete_on_interrupt = d.get_bool("complete_on_interrupt", self.complete_on_interrupt)
        self.cancel_during = d.get_str("cancel_during", "stream") or "stream"
        if d.get_bool("emit_first", True):
            if self.cancel_during == "tool":
                self.pending_tool = self.tool_use("Bash", {"command": "sleep 600", "description": "wait"})
            else:
                self.start_block_text(d.get_str("text", "working… ") or "")
        self.await_cancel(d)

    def start_block_text(self, first: str) -> None:
        idx = self.start_block({"type": "text", "text": ""})
        self.partial = {"index": idx, "text": ""}
        self.text_delta(first)

    def d_idle(self, d: core.Directive) -> None:
        for i in range(1, d.get_int("after", 1) + 1):
            if self.partial is None:
                self.start_block_text(f"part-{i} ")
            else:
                self.text_delta(f"part-{i} ")
        self.await_cancel(d)

    def d_fail(self, d: core.Directive) -> None:
        self.fail(
            d.get_str("message", "fake failure") or "",
            status=d.get_int("status", 529),
            not_logged_in=d.get_bool("not_logged_in"),
        )

    def d_crash(self, d: core.Directive) -> None:
        after = d.get_str("after", "none")
        if after == "delta":
            self.start_block_text("partial ")
        elif after == "tool":
            self.tool_use("Bash", {"command": "make", "description": "build"})
        self.crash_now(d)

    def flood_open(self) -> None:
        self.flood_index = self.start_block({"type": "text", "text": ""})

    def flood_delta(self, text: str) -> None:
        self.event(
            {"type": "content_block_delta", "index": self.flood_index, "delta": {"type": "text_delta", "text": text}}
        )

    def d_wrong_id(self, _d: core.Directive) -> None:
        """A control response to a request id the broker never sent, then wait for the cancel."""
        self.send(
            {
                "type": "control_response",
                "response": {
                    "subtype": "success",
                    "request_id": core.hostile.never_sent_id("groupx-interrupt"),
                    "response": {},
                },
            }
        )
        self.await_cancel(None)

    def d_garbage(self, d: core.Directive) -> None:
        self.garbage(d, self.cli.writer, self.cli.status_frame())

    def d_ask(self, d: core.Directive) -> None:
        kind = d.get_str("kind", "can_use_tool") or "can_use_tool"
        tool_id = None
        if kind == "can_use_tool":  # the model asked for a tool first; the permission check follows
            tool_id = self.pending_tool = self.tool_use(
                "Bash", {"command": "curl https://example.invalid", "description": "fetch"}
            )
        payload = ask_payload(kind, tool_id)
        reply = self.cli.ask(kind, payload)
        ok, why = check_ask_reply(kind, reply)
        self.cli.log_interaction(kind, ok, why, reply)
        if kind not in INTERACTIVE_KINDS or d.get_str("after", "cancel") != "cancel":
            if tool_id:  # the denied tool reports back like a real refusal
                self.tool_result(tool_id, "Permission denied (fake)", True, "Error: permission denied")
            return
        # After a deny GroupX interrupts (or tears the process down: stdin EOF ends us).
        window = float(self.scenario.get("interaction_cancel_window_ms", 5000)) / 1000.0
        got = self.ctl.cancel.wait(window)
        self.log.check("cancel_after_interaction", got, kind=kind, window_s=window, cancel_count=self.ctl.cancel_count)
        self.ctl.cancel.wait()
        raise Cancelled

    def d_noise(self, _d: core.Directive) -> None:
        self.send(self.cli.status_frame())
        self.send(
            {
                "type": "rate_limit_event",
                "rate_limit_info": {
                    "status": "allowed",
                    "resetsAt": int(time.time()) + 3600,
                    "rateLimitType": "five_hour",
                    "overageStatus": "rejected",
                    "isUsingOverage": False,
                },
                "uuid": _uid(),
                "session_id": self.sid,
            }
        )

    def d_foreign(self, d: core.Directive) -> None:
        self.assistant(
            [{"type": "text", "text": d.get_str("text", "not for you") or ""}],
            msg_id=f"msg_{uuid.uuid4().hex[:12]}",
            session_id=str(uuid.uuid4()),
        )

    def d_fallback_only(self, d: core.Directive) -> None:
        """Final text in an ``assistant`` frame with no stream events at all."""
        text = d.get_str("text") or f"echo: {self.message}"
        self._flush_partial()
        self.close_message("end_turn")
        self.num_turns += 1
        self.last_text = [text]
        self.text_parts.append(text)
        self.assistant([{"type": "text", "text": text}], msg_id=f"msg_{uuid.uuid4().hex[:12]}")

"""One Claude Code stream-json turn: frames to adapter events (NATIVE_PROTOCOLS §4.5–§4.7).

Claude has no native turn ids (X2): the GroupX turn id is the native one and ``TurnStarted`` is
emitted as soon as the user frame is written. Text arrives twice on the real wire, as
``text_delta`` stream events and again in the complete ``assistant`` frame (one per content block,
L7); the assistant copy is used only for a message id that streamed no text. The only native
terminal is the ``result`` frame.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .base import (
    TURN_CANCEL_TIMEOUT,
    TURN_INTERRUPTED,
    ContentDelta,
    ReasoningDelta,
    ToolProgress,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
)
from .jsonrpc import ConnectionLost, ProcessExited
from .turnkit import QueuedTurn, short

if TYPE_CHECKING:
    from .claude_session import ClaudeSession

log = logging.getLogger(__name__)

ABORT_REASONS = frozenset({"aborted_streaming", "aborted_tools"})
MCP_TOOL_PREFIX = "mcp__"


def is_abort(frame: dict[str, Any]) -> bool:
    return frame.get("terminal_reason") in ABORT_REASONS


def tool_details(name: str | None, status: str) -> dict[str, Any]:
    """The bounded projection of a tool_use: its name and status, never input or output."""
    label = name or "tool"
    details: dict[str, Any] = {
        "name": label,
        "status": status,
        "kind": "mcp" if label.startswith(MCP_TOOL_PREFIX) else "tool",
    }
    if label.startswith(MCP_TOOL_PREFIX):
        _, _, rest = label.partition(MCP_TOOL_PREFIX)
        server, _, tool = rest.partition("__")
        if server and tool:
            details["server"], details["tool"] = server, tool
    return details


def result_failure_message(frame: dict[str, Any]) -> str:
    parts = [str(frame.get("subtype"))]
    for key in ("terminal_reason", "api_error_status"):
        if frame.get(key) is not None:
            parts.append(f"{key}={frame[key]}")
    text = short(frame.get("result"), 500)
    errors = frame.get("errors")
    if not text and isinstance(errors, list) and errors:
        text = short("; ".join(str(e) for e in errors), 500)
    return "Claude Code ended the turn with " + ", ".join(parts) + (f": {text}" if text else "")


class ClaudeTurn(QueuedTurn):
    def __init__(self, session: ClaudeSession, turn_id: str):
        super().__init__(turn_id)
        self._session = session
        self.native_turn_id = turn_id
        self.saw_activity = False  # the CLI has sent a frame of this turn (init, status, stream…)
        self.interrupt_sent = False
        self._interrupt_wanted = False
        self._message_id: str | None = None
        self._tools: dict[str, str | None] = {}  # tool_use id -> name
        self._tools_done: set[str] = set()
        self._fallback_seen: set[tuple[str | None, str]] = set()
        self._emit(TurnStarted(native_turn_id=turn_id))

    # -- NativeTurn -----------------------------------------------------------------------------

    async def cancel(self) -> None:
        if self.terminal is not None or self.cancel_requested:
            return
        self.cancel_requested = True
        self._arm(
            self._session.profile.timeouts.cancel_ms,
            TurnFailed(TURN_CANCEL_TIMEOUT, "Claude Code did not confirm the interrupt"),
        )
        await self.send_interrupt()

    # -- driven by the session ------------------------------------------------------------------

    async def send_interrupt(self) -> None:
        """The control interrupt, at most once per turn. Before the CLI has begun the prompt (no
        init or stream frame yet) it is deferred: an interrupt that reaches an idle CLI settles
        nothing, and the queued prompt would then run to the end."""
        if self.interrupt_sent:
            return
        if not self.saw_activity:
            self._interrupt_wanted = True
            return
        self.interrupt_sent = True
        await self._session.send_interrupt()

    def mark_activity(self) -> None:
        self.saw_activity = True
        if self._interrupt_wanted and not self.interrupt_sent and self.terminal is None:
            self._session.spawn(self.send_interrupt())

    def fail_for_interaction(self, failure: TurnFailed) -> bool:
        return self._fail_early(failure, self._session.profile.timeouts.cancel_ms)

    def fail_now(self, failure: TurnFailed) -> None:
        """A verification failure: the session is rebuilt, so nothing is waited for."""
        self._poison()
        self._finish(failure)

    def on_stream_event(self, frame: dict[str, Any]) -> None:
        event = frame.get("event")
        if self.terminal is not None or self._failure is not None or not isinstance(event, dict):
            return
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message")
            message_id = message.get("id") if isinstance(message, dict) else None
            self._message_id = message_id if isinstance(message_id, str) else None
        elif kind == "content_block_start":
            block = event.get("content_block")
            if isinstance(block, dict) and block.get("type") == "tool_use":
                self._tool_started(block)
        elif kind == "content_block_delta":
            delta = event.get("delta")
            if not isinstance(delta, dict):
                return
            if delta.get("type") == "text_delta" and self._top_level(frame):
                text = delta.get("text")
                if isinstance(text, str) and text:
                    if self._message_id is not None:
                        self._session.streamed_messages.add(self._message_id)
                    self._emit(ContentDelta(text))
            elif delta.get("type") == "thinking_delta" and self._top_level(frame):
                text = delta.get("thinking")
                if isinstance(text, str) and text:
                    self._emit(ReasoningDelta(text))

    def on_assistant(self, frame: dict[str, Any]) -> None:
        message = frame.get("message")
        if self.terminal is not None or self._failure is not None or not isinstance(message, dict):
            return
        message_id = message.get("id") if isinstance(message.get("id"), str) else None
        content = message.get("content")
        if not isinstance(content, list):
            return
        streamed = message_id is not None and message_id in self._session.streamed_messages
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                self._tool_started(block)
            elif block.get("type") == "text" and not streamed and self._top_level(frame):
                text = block.get("text")
                # L7: one assistant frame per content block, all with the message's id; a block
                # seen twice is still emitted once.
                if isinstance(text, str) and text and (message_id, text) not in self._fallback_seen:
                    self._fallback_seen.add((message_id, text))
                    self._emit(ContentDelta(text))  # fallback: this message streamed no text

    def on_user(self, frame: dict[str, Any]) -> None:
        message = frame.get("message")
        if self.terminal is not None or self._failure is not None or not isinstance(message, dict):
            return
        content = message.get("content")
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            tool_id = block.get("tool_use_id")
            if not isinstance(tool_id, str) or tool_id in self._tools_done:
                continue
            self._tools_done.add(tool_id)
            status = "failed" if block.get("is_error") is True else "completed"
            self._emit(ToolProgress("tool.completed", tool_id, tool_details(self._tools.get(tool_id), status)))

    def on_result(self, frame: dict[str, Any]) -> None:
        if self.terminal is not None:
            return
        aborted = is_abort(frame) or (self.interrupt_sent and frame.get("subtype") == "error_during_execution")
        if self.interrupt_sent and not aborted:
            # §4.6 race: the turn settled on its own before the interrupt landed, so the CLI owes
            # one more `result` answering the interrupt; it must not end the next turn.
            self._session.owe_stray_result(self)
        if self._failure is not None:
            self._finish(self._failure)
        elif aborted:
            if self._session.closing and not self.cancel_requested:
                self.interrupt_for_close()
            else:
                self._finish(TurnCancelled())
        elif frame.get("subtype") == "success" and frame.get("is_error") is not True:
            result = frame.get("result")
            stop = frame.get("stop_reason")
            self._finish(
                TurnCompleted(
                    content=result if isinstance(result, str) and result else None,
                    stop_reason=stop if isinstance(stop, str) else None,
                )
            )
        else:
            # An API error, "Not logged in" (L4), max turns…: the turn failed, the process lives on.
            self._finish(TurnFailed(TURN_INTERRUPTED, result_failure_message(frame)))

    def on_lost(self, exc: ConnectionLost) -> None:
        if self._failure is not None:
            self._finish(self._failure)
        elif self._session.closing or (isinstance(exc, ProcessExited) and exc.expected):
            self.interrupt_for_close()
        else:
            self._finish(TurnFailed(exc.code, f"connection to Claude Code lost: {exc}"))

    def interrupt_for_close(self) -> None:
        self._finish(self._failure or TurnFailed(TURN_INTERRUPTED, "the session was closed during the turn"))

    # -- internals ------------------------------------------------------------------------------

    @staticmethod
    def _top_level(frame: dict[str, Any]) -> bool:
        # A sub-agent's own messages (Task tool) carry its tool_use id; they are not the reply.
        return frame.get("parent_tool_use_id") is None

    def _tool_started(self, block: dict[str, Any]) -> None:
        tool_id = block.get("id")
        if not isinstance(tool_id, str) or not tool_id or tool_id in self._tools:
            return  # deduplicated by id; a tool_use without an id is ignored (§4.5)
        name = short(block.get("name"))
        self._tools[tool_id] = name
        self._emit(ToolProgress("tool.started", tool_id, tool_details(name, "running")))

    def _poison(self) -> None:
        self._session.needs_rebuild = True

    def _finished(self) -> None:
        self._session.turn_finished(self)

"""One Codex App Server turn: notifications to adapter events (NATIVE_PROTOCOLS §2.6–§2.8).

The session (``codex_session.py``) has already dropped notifications for other threads and for
finished turns; what reaches ``on_notification`` belongs to this turn. The terminal comes from
``turn/completed`` (or a terminal ``turn/start`` response, C10), from an interaction failure once
the interrupt settled, from a timer, or from a lost connection.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .base import (
    PROTOCOL_INVALID_MESSAGE,
    TURN_CANCEL_TIMEOUT,
    TURN_INTERRUPTED,
    AdapterEvent,
    ContentDelta,
    ReasoningDelta,
    ToolProgress,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
)
from .jsonrpc import ConnectionLost, JsonRpcError, PendingRequest, ProcessExited
from .turnkit import QueuedTurn, short

if TYPE_CHECKING:
    from .codex_session import CodexSession

log = logging.getLogger(__name__)

TERMINAL_STATUSES = frozenset({"completed", "interrupted", "failed"})
# Item types reported as tool progress, with the coarse kind the UI groups them by.
TOOL_KINDS: dict[str, str] = {
    "commandExecution": "execute",
    "fileChange": "edit",
    "mcpToolCall": "mcp",
    "dynamicToolCall": "other",
    "collabToolCall": "agent",
    "collabAgentToolCall": "agent",
    "subAgentActivity": "agent",
    "webSearch": "search",
    "imageGeneration": "other",
}
_TOOL_NAMES = {
    "commandExecution": "shell",
    "fileChange": "edit files",
    "webSearch": "web search",
    "imageGeneration": "image generation",
}
REASONING_DELTAS = frozenset({"item/reasoning/summaryTextDelta", "item/reasoning/textDelta"})


def tool_details(item: dict[str, Any], *, completed: bool) -> dict[str, Any]:
    """The bounded projection of a tool item: labels and status, never arguments or output."""
    item_type = item.get("type")
    server, tool = short(item.get("server")), short(item.get("tool"))
    if item_type == "mcpToolCall" and server and tool:
        name = f"{server}/{tool}"
    else:
        name = tool or _TOOL_NAMES.get(str(item_type)) or str(item_type)
    details: dict[str, Any] = {
        "name": name,
        "status": short(item.get("status")) or ("completed" if completed else "inProgress"),
        "kind": TOOL_KINDS.get(str(item_type), "other"),
        "itemType": item_type,
    }
    if server:
        details["server"] = server
    if tool:
        details["tool"] = tool
    # The command line is the one label a person recognises a shell call by; it is cut short.
    title = short(item.get("command")) or short(item.get("title"))
    if title:
        details["title"] = title
    exit_code = item.get("exitCode")
    if isinstance(exit_code, int) and not isinstance(exit_code, bool):
        details["exitCode"] = exit_code
    changes = item.get("changes")
    if isinstance(changes, list):
        details["files"] = len(changes)
    return details


class CodexTurn(QueuedTurn):
    def __init__(self, session: CodexSession, turn_id: str):
        super().__init__(turn_id)
        self._session = session
        self.native_turn_id: str | None = None
        self._started = False
        self._streamed_items: set[str] = set()
        self._interrupt_wanted = False  # asked for before the native turn id was known (§2.7)
        self._interrupt_sent = False
        self._error_message: str | None = None  # from an `error` notification with willRetry false
        self._start_request: PendingRequest | None = None

    # -- NativeTurn -----------------------------------------------------------------------------

    async def cancel(self) -> None:
        if self.terminal is not None or self.cancel_requested:
            return
        self.cancel_requested = True
        timeouts = self._session.profile.timeouts
        self._arm(timeouts.cancel_ms, TurnFailed(TURN_CANCEL_TIMEOUT, "Codex did not confirm the interrupt"))
        await self.send_interrupt()

    # -- driven by the session ------------------------------------------------------------------

    def attach_start(self, request: PendingRequest) -> None:
        self._start_request = request
        request.future.add_done_callback(self._on_start_response)

    async def send_interrupt(self) -> None:
        """turn/interrupt, at most once per turn; deferred until the native turn id is known."""
        if self._interrupt_sent:
            return
        if self.native_turn_id is None:
            self._interrupt_wanted = True
            return
        self._interrupt_sent = True
        await self._session.send_interrupt(self.native_turn_id)

    def fail_for_interaction(self, failure: TurnFailed) -> bool:
        return self._fail_early(failure, self._session.profile.timeouts.cancel_ms)

    def adopt_id(self, native_id: str) -> None:
        if self.native_turn_id is None:
            self.native_turn_id = native_id
            if self._interrupt_wanted and not self._interrupt_sent:
                self._session.spawn(self.send_interrupt())
        if self.terminal is not None:
            self._session.forget_turn_id(native_id)
            return
        self._ensure_started()

    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        if self.terminal is not None:
            return
        if method == "turn/completed":
            turn = params.get("turn")
            self._on_completed(turn if isinstance(turn, dict) else {})
            return
        if method == "error":
            self._on_error(params)
            return
        if self._failure is not None:
            return  # an interaction already decided the outcome; only the settle matters now
        if method == "turn/started":
            return  # the session adopted the id, which emitted TurnStarted
        if method == "item/agentMessage/delta":
            delta = params.get("delta")
            item_id = params.get("itemId")
            if isinstance(item_id, str):
                self._streamed_items.add(item_id)
            if isinstance(delta, str) and delta:
                self._put(ContentDelta(delta))
        elif method in REASONING_DELTAS:
            delta = params.get("delta")
            if isinstance(delta, str) and delta:
                self._put(ReasoningDelta(delta))
        elif method in ("item/started", "item/completed"):
            item = params.get("item")
            if isinstance(item, dict):
                self._on_item(item, completed=method == "item/completed")

    def on_lost(self, exc: ConnectionLost) -> None:
        if self._failure is not None:
            self._finish(self._failure)
        elif self._session.closing or (isinstance(exc, ProcessExited) and exc.expected):
            self.interrupt_for_close()
        else:
            self._finish(TurnFailed(exc.code, f"connection to Codex lost: {exc}"))

    def interrupt_for_close(self) -> None:
        self._finish(self._failure or TurnFailed(TURN_INTERRUPTED, "the session was closed during the turn"))

    # -- internals ------------------------------------------------------------------------------

    def _ensure_started(self) -> None:
        if not self._started:
            self._started = True
            self._emit(TurnStarted(native_turn_id=self.native_turn_id))

    def _put(self, event: AdapterEvent) -> None:
        self._ensure_started()
        self._emit(event)

    def _on_item(self, item: dict[str, Any], *, completed: bool) -> None:
        item_type = item.get("type")
        item_id = item.get("id") if isinstance(item.get("id"), str) else None
        if item_type in TOOL_KINDS:
            self._put(
                ToolProgress(
                    "tool.completed" if completed else "tool.started", item_id, tool_details(item, completed=completed)
                )
            )
        elif item_type == "agentMessage" and completed and item_id not in self._streamed_items:
            # The final text of an item that streamed no deltas (fallback); never a second copy.
            text = item.get("text")
            if isinstance(text, str) and text:
                self._put(ContentDelta(text))

    def _on_error(self, params: dict[str, Any]) -> None:
        error = params.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        if params.get("willRetry") is True:
            # C1: Codex is retrying a transient stream failure itself; the turn goes on.
            log.info("codex turn %s: retrying after %s", self.turn_id, short(message))
            return
        # The terminal still comes from turn/completed, which then carries this reason along.
        self._error_message = short(message, 500) or "Codex reported an error"

    def _on_completed(self, turn: dict[str, Any]) -> None:
        native_id = turn.get("id")
        if isinstance(native_id, str) and native_id:
            self.adopt_id(native_id)
        status = turn.get("status")
        if self._failure is not None:
            self._finish(self._failure)
        elif status == "completed":
            self._finish(TurnCompleted(content=None, stop_reason="completed"))
        elif status == "interrupted":
            if self._session.closing and not self.cancel_requested:
                self.interrupt_for_close()  # cut off by GroupX's own stop, not by the user
            else:
                self._finish(TurnCancelled())
        else:
            error = turn.get("error")
            native = error.get("message") if isinstance(error, dict) else None
            message = short(native, 500) or self._error_message or f"Codex ended the turn with status {status!r}"
            self._finish(TurnFailed(TURN_INTERRUPTED, message))

    def _on_start_response(self, future: Any) -> None:
        if future.cancelled():
            return
        exc = future.exception()
        if isinstance(exc, ConnectionLost):
            return  # the session's on_lost decides the terminal
        if exc is not None and self.terminal is not None:
            return
        if isinstance(exc, JsonRpcError):
            self._poison()
            self._finish(
                self._failure or TurnFailed(PROTOCOL_INVALID_MESSAGE, f"turn/start refused: {exc.code} {exc.message}")
            )
            return
        if exc is not None:
            self._poison()
            self._finish(TurnFailed(PROTOCOL_INVALID_MESSAGE, f"turn/start failed: {exc}"))
            return
        result = future.result()
        turn = result.get("turn") if isinstance(result, dict) else None
        if not isinstance(turn, dict):
            turn = {}  # no turn: no id, which fails the Turn below
        native_id = turn.get("id")
        if not isinstance(native_id, str) or not native_id:
            self._poison()
            self._finish(TurnFailed(PROTOCOL_INVALID_MESSAGE, f"turn/start returned no turn id: {result!r:.200}"))
            return
        self.adopt_id(native_id)
        if turn.get("status") in TERMINAL_STATUSES:  # C10: the response itself is terminal
            self._on_completed(turn)

    def _poison(self) -> None:
        self._session.needs_rebuild = True

    def _finished(self) -> None:
        self._session.turn_finished(self)

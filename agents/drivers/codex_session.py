"""One Codex App Server thread in one child process (NATIVE_PROTOCOLS §2.6–§2.9).

The session owns the JSON-RPC client, filters notifications (other threads, finished turns, C5
noise) before they reach the active ``CodexTurn``, answers the server's requests, and tracks the
GroupX MCP server's startup status. ``CodexDriver`` (``codex.py``) runs the handshake.

Native interactions (§2.8; each fails only its own turn): every approval, permission, user-input or
elicitation request is settled at once with a cancel or empty answer, the native turn is
interrupted, and the GroupX turn fails with ``UNEXPECTED_NATIVE_INTERACTION`` once Codex confirms
the interrupt. The thread then takes the next turn normally; only an interrupt that never settles
marks the session for a rebuild.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from .base import (
    UNEXPECTED_NATIVE_INTERACTION,
    DriverError,
    LaunchProfile,
    NativeTurn,
    TurnFailed,
)
from .codex_turn import REASONING_DELTAS, CodexTurn
from .jsonrpc import METHOD_NOT_FOUND, ConnectionLost, InboundRequest, JsonRpcClient, JsonRpcError
from .process import JsonLineProcess, ProcessTerminationError
from .turnkit import ChildSession, RecentIds, short

log = logging.getLogger(__name__)

GROUPX_MCP_NAME = "groupx"
# What GroupX answers to each native interaction request (§2.8): settle it, never approve.
INTERACTION_REPLIES: dict[str, Any] = {
    "item/commandExecution/requestApproval": {"decision": "cancel"},
    "item/fileChange/requestApproval": {"decision": "cancel"},
    "item/permissions/requestApproval": {"permissions": {}},
    "item/tool/requestUserInput": {"answers": {}},
    "tool/requestUserInput": {"answers": {}},
    "mcpServer/elicitation/request": {"action": "cancel", "content": None},
}
# Notifications that belong to a turn; everything else (C5 traffic) is ignored.
TURN_NOTIFICATIONS = frozenset(
    {
        "turn/started",
        "turn/completed",
        "item/started",
        "item/completed",
        "item/agentMessage/delta",
        "error",
        *REASONING_DELTAS,
    }
)


def _turn_id_of(method: str, params: dict[str, Any]) -> str | None:
    if method.startswith("turn/"):
        turn = params.get("turn")
        value = turn.get("id") if isinstance(turn, dict) else None
    else:
        value = params.get("turnId")
    return value if isinstance(value, str) and value else None


class CodexSession(ChildSession[CodexTurn]):
    def __init__(self, profile: LaunchProfile):
        super().__init__(profile)
        self.native_session_id = ""
        self.mcp_status: str | None = None  # starting | ready | failed, from mcpServer/startupStatus/updated
        self.mcp_error: str | None = None
        self.client: JsonRpcClient | None = None
        self._finished_ids = RecentIds()
        self._mcp_by_thread: dict[str, tuple[str, str | None]] = {}  # reported before the thread id is known

    # -- wiring ---------------------------------------------------------------------------------

    def attach(self, process: JsonLineProcess) -> JsonRpcClient:
        self.process = process
        self.client = JsonRpcClient(
            process,
            dialect="codex",
            id_prefix="groupx-",
            on_request=self._on_request,
            on_notification=self._on_notification,
            on_lost=self._on_lost,
            pace=self.pace_reader,
        )
        self.client.start()
        return self.client

    @property
    def alive(self) -> bool:
        return (
            self.process is not None
            and self.process.running
            and self.client is not None
            and self.client.lost is None
            and not self.closing
        )

    # -- start-time plumbing (used by CodexDriver) ----------------------------------------------

    def set_thread(self, thread_id: str) -> None:
        self.native_session_id = thread_id
        reported = self._mcp_by_thread.pop(thread_id, None)
        self._mcp_by_thread.clear()
        if reported is not None:
            self._set_mcp_status(*reported)

    def started(self, *, resumed: bool) -> None:
        self._starting = False
        self.resumed = resumed

    # -- turns ----------------------------------------------------------------------------------

    async def start_turn(self, turn_id: str, prompt_text: str) -> NativeTurn:
        self.check_turn_slot("codex")
        client = self.client
        assert client is not None
        turn = CodexTurn(self, turn_id)
        params = {"threadId": self.native_session_id, "input": [{"type": "text", "text": prompt_text}]}
        request = await self.write_prompt(turn, lambda: client.send_request("turn/start", params), "turn/start")
        turn.attach_start(request)
        return turn

    def turn_finished(self, turn: CodexTurn) -> None:
        if turn.native_turn_id is not None:
            self._finished_ids.add(turn.native_turn_id)
        if self._turn is turn:
            self._turn = None

    def forget_turn_id(self, native_id: str) -> None:
        """A finished turn learned its native id late; drop that turn's stragglers from now on."""
        self._finished_ids.add(native_id)

    async def send_interrupt(self, native_turn_id: str) -> None:
        if self.client is None:
            return
        params = {"threadId": self.native_session_id, "turnId": native_turn_id}
        try:
            request = await self.client.send_request("turn/interrupt", params)
        except ConnectionLost as exc:
            log.info("turn/interrupt not sent: %s", exc)
            return

        def done(future: asyncio.Future[Any]) -> None:
            # A refused interrupt is left to the cancel timer: turn/completed may still come.
            if not future.cancelled() and isinstance(future.exception(), JsonRpcError):
                log.warning("codex refused turn/interrupt for %s: %s", native_turn_id, future.exception())

        request.future.add_done_callback(done)

    # -- inbound --------------------------------------------------------------------------------

    def _on_notification(self, method: str, params: Any) -> None:
        if not isinstance(params, dict):
            return
        if method == "mcpServer/startupStatus/updated":
            self._on_mcp_status(params)
            return
        if method not in TURN_NOTIFICATIONS:
            return  # C5: configWarning, thread/status/changed, tokenUsage, deprecationNotice, …
        thread_id = params.get("threadId")
        if thread_id is not None and thread_id != self.native_session_id:
            return  # another thread's traffic
        native_id = _turn_id_of(method, params)
        if native_id is not None and native_id in self._finished_ids:
            log.debug("dropping %s for finished turn %s", method, native_id)  # e.g. a late turn/completed
            return
        turn = self._turn
        if turn is None:
            return
        if native_id is not None:
            if turn.native_turn_id is None:
                turn.adopt_id(native_id)  # turn/started can come before the turn/start response
            elif native_id != turn.native_turn_id:
                return
        turn.on_notification(method, params)

    def _on_mcp_status(self, params: dict[str, Any]) -> None:
        if params.get("name") != GROUPX_MCP_NAME:
            return
        status = params.get("status")
        if not isinstance(status, str):
            return
        error = short(params.get("error"), 500)
        thread_id = params.get("threadId")
        if isinstance(thread_id, str) and thread_id and thread_id != self.native_session_id:
            if not self.native_session_id:
                self._mcp_by_thread[thread_id] = (status, error)
            return
        self._set_mcp_status(status, error)

    def _set_mcp_status(self, status: str, error: str | None) -> None:
        self.mcp_status = status
        if status == "ready":
            self.mcp_verified = True
            self.mcp_error = None
        elif status == "failed":
            self.mcp_verified = False
            self.mcp_error = error
            log.warning("codex could not start the GroupX MCP server: %s", error)

    def _on_request(self, request: InboundRequest) -> Any:
        method = request.method
        reply = INTERACTION_REPLIES.get(method)
        params = request.params if isinstance(request.params, dict) else {}
        what = f"Codex sent {method}, which GroupX never answers with an approval"
        turn = self._turn
        belongs = (
            turn is not None
            and params.get("threadId") in (None, self.native_session_id)
            and params.get("turnId") not in self._finished_ids
        )
        # Decided synchronously, before any later frame is dispatched to the turn.
        interrupt = False
        if self._starting:
            if not self._start_fatal.done():
                self._start_fatal.set_result(DriverError(UNEXPECTED_NATIVE_INTERACTION, what))
        elif belongs and turn is not None and turn.cancel_requested:
            # The turn is already being cancelled for the user: settling is enough, it stays cancelled.
            log.info("%s during a requested cancel: settled, turn left to finish", method)
        elif belongs and turn is not None:
            # Unknown requests fail the turn too (§2.8): the CLI waits on an answer we cannot give.
            interrupt = turn.fail_for_interaction(TurnFailed(UNEXPECTED_NATIVE_INTERACTION, what))
        elif reply is not None:
            log.warning("%s outside a turn; the session will be rebuilt", method)
            self.needs_rebuild = True

        async def settle() -> Any:
            # The reply goes out first so the CLI never blocks on us, then the interrupt.
            if reply is None:
                await request.respond_error(METHOD_NOT_FOUND, f"Unsupported Codex server request: {method}")
            else:
                await request.respond(reply)
            if interrupt and turn is not None:
                await turn.send_interrupt()
            return reply

        return settle()

    def _on_lost(self, exc: ConnectionLost) -> None:
        if not self.closing:
            self.needs_rebuild = True
        if self._turn is not None:
            self._turn.on_lost(exc)

    # -- close ----------------------------------------------------------------------------------

    async def _close(self) -> None:
        timeouts = self.profile.timeouts
        turn = self._turn
        was_alive = self.alive
        self.closing = True  # before anything is sent: an `interrupted` terminal now means "closed"
        if was_alive and turn is not None and turn.terminal is None:
            # §2.7: interrupt an active turn and give it cancel_ms to settle before the process goes.
            try:
                await asyncio.wait_for(turn.send_interrupt(), timeouts.request_ms / 1000)
            except TimeoutError:
                log.info("turn/interrupt write timed out during close")
            await turn.wait_terminal(timeouts.cancel_ms / 1000)
        if self.client is not None:
            await self.client.drain_replies(1.0)
            self.client.mark_closing()
        if self.process is not None:
            try:
                await self.process.close(timeouts.close_ms)
            except ProcessTerminationError:
                log.error("codex process %s survived SIGKILL", self.process.pid)
        if turn is not None:
            turn.interrupt_for_close()
        for task in list(self._background):
            task.cancel()

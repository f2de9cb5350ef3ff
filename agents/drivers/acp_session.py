"""One ACP native session and its turns (NATIVE_PROTOCOLS §3.4–§3.7).

The session owns the child process and the JSON-RPC client, routes ``session/update``
notifications to the active turn (or to the replay buffer during ``session/load``), and answers
the agent's requests. ``AcpDriver`` (``acp.py``) runs the handshake through ``step``.

Native interactions (NATIVE_PROTOCOLS §1.9; each fails only its own turn): a permission or elicitation request is settled
at once with a cancel, the native turn is cancelled, and the GroupX turn fails with
``UNEXPECTED_NATIVE_INTERACTION`` only once the native prompt has settled, so the next turn can
reuse the session. If it does not settle within ``cancel_ms`` the session needs a rebuild.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any

from groupx_site.core.driver_table import DRIVERS

from .acp_policy import grok_policy_marker
from .base import (
    NATIVE_POLICY_BLOCKED,
    PROTOCOL_INVALID_MESSAGE,
    TURN_CANCEL_TIMEOUT,
    TURN_INTERRUPTED,
    UNEXPECTED_NATIVE_INTERACTION,
    AdapterEvent,
    ContentDelta,
    DriverError,
    LaunchProfile,
    NativeTurn,
    ReasoningDelta,
    ToolProgress,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
)
from .jsonrpc import (
    METHOD_NOT_FOUND,
    ConnectionLost,
    InboundRequest,
    JsonRpcClient,
    JsonRpcError,
    PendingRequest,
    ProcessExited,
)
from .process import JsonLineProcess, ProcessTerminationError
from .turnkit import ChildSession, QueuedTurn, short

log = logging.getLogger(__name__)

# session/load replays the whole history (one update a line); it is counted, never emitted as turn
# events, and only its last few updates are kept, so a long session costs no memory here.
REPLAY_KEPT = 16
_TOOL_DONE = frozenset({"completed", "failed", "cancelled"})

# What GroupX answers to each native interaction request (§1.9): settle it, never approve.
INTERACTION_REPLIES: dict[str, Any] = {
    "session/request_permission": {"outcome": {"outcome": "cancelled"}},
    "elicitation/create": {"action": "cancel"},
}


class AcpTurn(QueuedTurn):
    """One ``session/prompt``. Its terminal is decided exactly once (``QueuedTurn._finish``)."""

    native_turn_id = None  # ACP has no native turn ids (X2)

    def __init__(self, session: AcpSession, turn_id: str):
        super().__init__(turn_id)
        self._session = session
        self._prompt: PendingRequest | None = None
        self._had_content = False
        self._cancel_sent = False
        self._tools: dict[str, dict[str, Any]] = {}
        self._emit(TurnStarted(native_turn_id=None))

    # -- NativeTurn -----------------------------------------------------------------------------

    async def cancel(self) -> None:
        if self.terminal is not None or self.cancel_requested:
            return
        self.cancel_requested = True
        await self._send_native_cancel()
        # Not in the TS kernel (A8): without a bound a silent agent would hold the turn forever.
        self._arm(
            self._session.profile.timeouts.cancel_ms,
            TurnFailed(TURN_CANCEL_TIMEOUT, "the agent did not confirm the cancel"),
        )

    # -- driven by the session ------------------------------------------------------------------

    def _attach_prompt(self, prompt: PendingRequest) -> None:
        self._prompt = prompt
        prompt.future.add_done_callback(self._on_prompt_done)

    async def _send_native_cancel(self) -> None:
        """session/cancel, at most once per turn, written after the prompt on the same pipe."""
        if self._cancel_sent:
            return
        self._cancel_sent = True
        await self._session.notify_cancel()

    def fail_for_interaction(self, failure: TurnFailed) -> bool:
        """The turn failed natively (interaction, policy marker); the caller then cancels the
        native turn. The failure is emitted once the prompt settles. False if already decided."""
        return self._fail_early(failure, self._session.profile.timeouts.cancel_ms)

    def _interrupt(self) -> None:
        self._finish(self._failure or TurnFailed(TURN_INTERRUPTED, "the session was closed during the turn"))

    def _poison(self) -> None:
        self._session.needs_rebuild = True

    def _finished(self) -> None:
        if self._prompt is not None and not self._prompt.done():
            self._prompt.forget()  # a late prompt response is only logged
        self._session._turn_finished(self)

    def _on_update(self, update: dict[str, Any]) -> None:
        if self.terminal is not None or self._failure is not None:
            return
        kind = update.get("sessionUpdate")
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            content = update.get("content")
            if isinstance(content, dict) and content.get("type") == "text":
                text = content.get("text")
                if isinstance(text, str) and text:
                    if kind == "agent_message_chunk":
                        self._had_content = True
                        self._emit(ContentDelta(text))
                    else:
                        self._emit(ReasoningDelta(text))
        elif kind in ("tool_call", "tool_call_update"):
            self._on_tool(kind, update)

    def _on_tool(self, kind: str, update: dict[str, Any]) -> None:
        raw_id = update.get("toolCallId")
        call_id = raw_id if isinstance(raw_id, str) else None
        # Updates usually omit the title; remember what tool_call said so progress stays labelled.
        known = self._tools.setdefault(call_id or "", {"title": None, "kind": None, "status": "pending"})
        for key in ("title", "kind", "status"):
            value = short(update.get(key))
            if value is not None:
                known[key] = value
        details = {
            "name": known["title"] or known["kind"] or "tool",
            "title": known["title"],
            "kind": known["kind"],
            "status": known["status"],
        }
        done = kind == "tool_call_update" and known["status"] in _TOOL_DONE
        self._emit(ToolProgress("tool.completed" if done else "tool.started", call_id, details))

    def _on_prompt_done(self, future: asyncio.Future[Any]) -> None:
        if future.cancelled():
            return
        exc = future.exception()
        closing = self._session.closing
        lost = isinstance(exc, ConnectionLost)
        if lost and not closing and not (isinstance(exc, ProcessExited) and exc.expected):
            self._session.needs_rebuild = True
        if self._failure is not None:
            # The native side settled (or died on) the interrupted turn; the failure stands.
            self._finish(self._failure)
        elif exc is not None and (closing or (isinstance(exc, ProcessExited) and exc.expected)):
            self._interrupt()
        elif lost:
            self._finish(TurnFailed(PROTOCOL_INVALID_MESSAGE, f"connection lost: {exc}"))
        elif isinstance(exc, JsonRpcError):
            # A9: rate limits and model errors arrive as a JSON-RPC error answering the prompt. The
            # agent answered in step, so its session stays; the code is the one Codex and Claude
            # give a model error (docs/DECISIONS.md D38), not the reference's PROTOCOL_INVALID_MESSAGE.
            self._finish(TurnFailed(TURN_INTERRUPTED, f"session/prompt failed: {exc.message}"))
        elif exc is not None:
            self._session.needs_rebuild = True
            self._finish(TurnFailed(PROTOCOL_INVALID_MESSAGE, f"session/prompt failed: {exc}"))
        else:
            self._finish(self._terminal_for(future.result()))

    def _terminal_for(self, result: Any) -> AdapterEvent:
        stop = result.get("stopReason") if isinstance(result, dict) else None
        if not isinstance(stop, str) or not stop:
            self._session.needs_rebuild = True
            return TurnFailed(PROTOCOL_INVALID_MESSAGE, f"session/prompt result without stopReason: {result!r:.200}")
        if stop == "cancelled":
            if self._session.closing and not self.cancel_requested:
                # Cancelled by our close, not by the user: a turn cut off by GroupX's own stop.
                return TurnFailed(TURN_INTERRUPTED, "the session was closed during the turn")
            return TurnCancelled()
        if stop == "refusal" and not self._had_content:
            # Quirk A3: Hermes "loads" an unknown session and then refuses every prompt silently.
            self._session.needs_rebuild = True
            return TurnFailed(PROTOCOL_INVALID_MESSAGE, "agent refused")
        return TurnCompleted(content=None, stop_reason=stop)


class AcpSession(ChildSession[AcpTurn]):
    def __init__(self, flavor: str, profile: LaunchProfile):
        super().__init__(profile)
        self.flavor = flavor
        # Only a CLI whose table row says so (Grok) reports managed policies on stderr.
        spec = DRIVERS.get(flavor)
        self.watches_policy_markers = bool(spec and spec.stderr_policy_markers)
        self.native_session_id = ""
        self.agent_capabilities: dict[str, Any] = {}
        self.agent_info: dict[str, Any] = {}
        self.replay: deque[dict[str, Any]] = deque(maxlen=REPLAY_KEPT)
        self.replayed = 0  # updates replayed by session/load
        self.client: JsonRpcClient | None = None
        self.policy_marker: str | None = None
        self._loading = False

    # -- wiring ---------------------------------------------------------------------------------

    def attach(self, process: JsonLineProcess) -> JsonRpcClient:
        self.process = process
        self.client = JsonRpcClient(
            process,
            dialect="acp",
            id_prefix=f"{self.profile.agent_id}:",
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

    # -- start-time plumbing (used by AcpDriver) ------------------------------------------------

    def _set_start_fatal(self, error: DriverError) -> None:
        if self._starting and not self._start_fatal.done():
            self._start_fatal.set_result(error)

    def started(self, *, resumed: bool) -> None:
        self._starting = False
        self.resumed = resumed
        self.mcp_verified = self.profile.mcp is not None

    def set_loading(self, loading: bool) -> None:
        self._loading = loading

    # -- turns ----------------------------------------------------------------------------------

    async def start_turn(self, turn_id: str, prompt_text: str) -> NativeTurn:
        self.check_turn_slot(self.flavor)
        client = self.client
        assert client is not None
        turn = AcpTurn(self, turn_id)
        params = {"sessionId": self.native_session_id, "prompt": [{"type": "text", "text": prompt_text}]}
        # No timeout on the prompt (§1.5): the terminal is its response, however late.
        prompt = await self.write_prompt(turn, lambda: client.send_request("session/prompt", params), "the prompt")
        turn._attach_prompt(prompt)
        return turn

    def _turn_finished(self, turn: AcpTurn) -> None:
        if self._turn is turn:
            self._turn = None

    async def notify_cancel(self) -> None:
        if self.client is None or not self.native_session_id:
            return
        try:
            await self.client.notify("session/cancel", {"sessionId": self.native_session_id})
        except ConnectionLost as exc:
            log.info("session/cancel not sent: %s", exc)

    # -- inbound --------------------------------------------------------------------------------

    def _on_notification(self, method: str, params: Any) -> None:
        if method != "session/update" or not isinstance(params, dict):
            return  # unknown and `_vendor/...` notifications are ignored (A2)
        update = params.get("update")
        if params.get("sessionId") != self.native_session_id or not isinstance(update, dict):
            return
        if self._loading:
            self.replayed += 1
            self.replay.append(update)
        elif self._turn is not None:
            self._turn._on_update(update)

    def _on_request(self, request: InboundRequest) -> Any:
        reply = INTERACTION_REPLIES.get(request.method)
        if reply is None:
            # fs/*, terminal/*, extensions: we advertised no client capabilities (§3.6).
            raise JsonRpcError(METHOD_NOT_FOUND, f"Method not found: {request.method}")
        what = f"the agent sent {request.method}, which GroupX never approves"
        # Decided synchronously, before any later frame is dispatched to the turn.
        turn = self._turn
        cancel_turn = False
        if self._starting:
            self._set_start_fatal(DriverError(UNEXPECTED_NATIVE_INTERACTION, what))
        elif turn is not None and turn.cancel_requested:
            # The race of §6.7 `after=cancel_first`: the turn is already being cancelled on the
            # user's behalf, so settling the request is enough and the terminal stays "cancelled".
            log.info("%s during a requested cancel: settled, turn left to finish", request.method)
        elif turn is not None:
            cancel_turn = turn.fail_for_interaction(TurnFailed(UNEXPECTED_NATIVE_INTERACTION, what))
        else:
            log.warning("%s outside a turn: %s", self.flavor, what)

        async def settle() -> None:
            await request.respond(reply)  # the reply goes out before the cancel
            if cancel_turn and turn is not None:
                await turn._send_native_cancel()
            elif turn is None:
                await self.notify_cancel()  # nothing to fail; make sure nothing keeps running

        return settle()

    def _on_stderr(self, _text: str) -> None:
        if not self.watches_policy_markers or self.policy_marker is not None or self.process is None:
            return
        marker = grok_policy_marker(self.process.stderr_tail)
        if marker is None:
            return
        self.policy_marker = marker
        message = f"{self.flavor} reports a managed policy: {marker!r}"
        # A CLI under managed policy is not the unrestricted agent GroupX launched.
        self.needs_rebuild = True
        if self._starting:
            self._set_start_fatal(DriverError(NATIVE_POLICY_BLOCKED, message, retryable=False))
        elif self._turn is not None:
            turn = self._turn
            if turn.fail_for_interaction(TurnFailed(NATIVE_POLICY_BLOCKED, message)):
                self.spawn(turn._send_native_cancel())

    def _on_lost(self, exc: ConnectionLost) -> None:
        if not self.closing:
            self.needs_rebuild = True

    # -- close ----------------------------------------------------------------------------------

    async def _close(self) -> None:
        timeouts = self.profile.timeouts
        turn = self._turn
        was_alive = self.alive
        self.closing = True  # before anything is sent: late answers now mean "interrupted"
        if was_alive:
            if turn is not None:
                try:  # the prompt's terminal is not awaited (§3.7)
                    await asyncio.wait_for(turn._send_native_cancel(), timeouts.handshake_ms / 1000)
                except TimeoutError:
                    log.info("session/cancel write timed out during close")
            # Not after a failed start: the agent may be the reason, and close must stay quick.
            session_caps = self.agent_capabilities.get("sessionCapabilities")
            close_cap = session_caps.get("close") if isinstance(session_caps, dict) else None
            if not self._starting and isinstance(close_cap, dict):
                assert self.client is not None
                try:
                    await self.client.request(
                        "session/close", {"sessionId": self.native_session_id}, timeout=timeouts.request_ms / 1000
                    )
                except (JsonRpcError, ConnectionLost, TimeoutError) as exc:
                    log.info("session/close ignored: %s", exc)
        if self.client is not None:
            self.client.mark_closing()
        if self.process is not None:
            try:
                await self.process.close(timeouts.close_ms)
            except ProcessTerminationError:
                log.error("%s process %s survived SIGKILL", self.flavor, self.process.pid)
        if turn is not None:
            turn._interrupt()  # normally already settled by the prompt failing at EOF
        for task in list(self._background):
            task.cancel()

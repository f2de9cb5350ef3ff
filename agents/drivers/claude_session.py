"""One Claude Code ``--print`` stream-json process and its session (NATIVE_PROTOCOLS §4).

The wire is not JSON-RPC: every line is an object with a ``type``. The session reads stdout,
matches ``control_response`` frames to its own control requests (``groupx-<subtype>-<n>``),
answers the CLI's control requests, verifies each ``system/init`` frame, routes the turn's frames
to the active ``ClaudeTurn``, and absorbs the stray ``result`` an interrupt race leaves behind
(§4.6). ``ClaudeDriver`` (``claude.py``) launches it and runs the two-request handshake.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from groupx_site.core.driver_table import DRIVERS

from .base import (
    NATIVE_POLICY_BLOCKED,
    PROTOCOL_INVALID_MESSAGE,
    SESSION_NOT_AVAILABLE,
    UNEXPECTED_NATIVE_INTERACTION,
    DriverError,
    LaunchProfile,
    NativeTurn,
    TurnFailed,
)
from .claude_turn import ClaudeTurn, is_abort
from .jsonrpc import ConnectionLost, FrameReader, ProcessExited, ProtocolViolation
from .process import JsonLineProcess, ProcessClosedError, ProcessTerminationError
from .turnkit import ChildSession, RecentIds, same_path, short

log = logging.getLogger(__name__)

PERMISSION_MODE = DRIVERS["claude"].mode
GROUPX_MCP_NAME = "groupx"
INTERACTIVE_SUBTYPES = frozenset({"can_use_tool", "elicitation", "request_user_dialog"})
DENY_MESSAGE = "GroupX runs Claude Code unrestricted and does not answer permission requests"
TURN_FRAMES = frozenset({"stream_event", "assistant", "user", "result"})


class ControlRefused(Exception):
    """The CLI answered one of our control requests with ``subtype: error``."""

    def __init__(self, error: str, error_code: str | None):
        super().__init__(error)
        self.error = error
        self.error_code = error_code


class ClaudeSession(ChildSession[ClaudeTurn]):
    def __init__(self, profile: LaunchProfile, session_id: str, *, resuming: bool):
        super().__init__(profile)
        self.native_session_id = session_id  # chosen by GroupX (--session-id) or the stored one (--resume)
        self.resuming = resuming
        self.mcp_status: str | None = None  # from system/init mcp_servers: connected | failed | pending
        self.initial_permission_mode: str | None = None  # observational only; 2.1.197 omits it
        self.cli_pid: int | None = None
        self.cli_version: str | None = None
        self.startup_result: dict[str, Any] | None = None  # a `result` before any turn (L3)
        self.streamed_messages = RecentIds()  # message ids whose text streamed as deltas
        self.lost: ConnectionLost | None = None
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._counter = 0
        self._stray_owed = False
        self._stray_owner: ClaudeTurn | None = None
        self._frames: FrameReader | None = None

    # -- wiring ---------------------------------------------------------------------------------

    def attach(self, process: JsonLineProcess) -> None:
        self.process = process
        self._frames = FrameReader(
            process,
            dispatch=self._dispatch,
            fail=self._fail,
            closing=lambda: self.closing,
            label="claude",
            pace=self.pace_reader,
        )
        self._frames.start()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.running and self.lost is None and not self.closing

    def started(self) -> None:
        self._starting = False
        self.resumed = self.resuming

    # -- outgoing -------------------------------------------------------------------------------

    async def _write(self, frame: dict[str, Any]) -> None:
        """One frame on stdin. encode_frame refuses anything malformed: one bad line kills the CLI (L5)."""
        assert self.process is not None
        if self.lost is not None:
            raise self.lost
        try:
            await self.process.write_frame(frame)
        except ProcessClosedError as exc:
            raise self.lost or ProcessExited(
                str(exc), returncode=self.process.returncode, expected=self.closing
            ) from exc

    async def control(
        self, subtype: str, fields: dict[str, Any] | None = None, *, expect_reply: bool = True
    ) -> asyncio.Future[Any]:
        """Write a control request; the future gets the success ``response`` object, or
        ControlRefused / ConnectionLost."""
        self._counter += 1
        request_id = f"groupx-{subtype}-{self._counter}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
        if expect_reply:
            self._pending[request_id] = future
        try:
            await self._write(
                {"type": "control_request", "request_id": request_id, "request": {"subtype": subtype, **(fields or {})}}
            )
        except BaseException:
            self._pending.pop(request_id, None)
            future.cancel()
            raise
        return future

    def _was_sent(self, request_id: Any) -> bool:
        """Ours are ``groupx-<subtype>-<n>`` for n = 1..counter: known exactly, however old."""
        if not isinstance(request_id, str) or not request_id.startswith("groupx-"):
            return False
        number = request_id.rpartition("-")[2]
        return number.isascii() and number.isdigit() and not number.startswith("0") and int(number) <= self._counter

    async def send_interrupt(self) -> None:
        # The acknowledgement is not awaited (§4.6): the `result` frame is what settles the turn.
        try:
            await self.control("interrupt", expect_reply=False)
        except ConnectionLost as exc:
            log.info("interrupt not sent: %s", exc)

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """As ChildSession.spawn; a write that finds the CLI gone is no error here, as the loss
        reaches the turn through the reader anyway."""

        async def guarded() -> None:
            try:
                await coro
            except ConnectionLost as exc:
                log.debug("not sent: %s", exc)

        super().spawn(guarded())

    # -- turns ----------------------------------------------------------------------------------

    async def start_turn(self, turn_id: str, prompt_text: str) -> NativeTurn:
        self.check_turn_slot("claude")
        turn = ClaudeTurn(self, turn_id)
        # The shape the real CLI is fed (real-cli transcripts): a user message, no parent tool use.
        frame = {
            "type": "user",
            "message": {"role": "user", "content": [{"type": "text", "text": prompt_text}]},
            "parent_tool_use_id": None,
            "session_id": self.native_session_id,
        }
        await self.write_prompt(turn, lambda: self._write(frame), "the prompt")
        return turn

    def turn_finished(self, turn: ClaudeTurn) -> None:
        if self._turn is turn:
            self._turn = None
        if self._stray_owed and self._stray_owner is not turn and turn.saw_activity:
            # The stray comes right after the next prompt; a whole turn later it is not coming.
            self._stray_owed = False

    def owe_stray_result(self, owner: ClaudeTurn) -> None:
        self._stray_owed = True
        self._stray_owner = owner

    # -- inbound --------------------------------------------------------------------------------

    def _fail(self, exc: ConnectionLost) -> None:
        if self.lost is not None:
            return
        self.lost = exc
        log.log(
            logging.INFO if self.closing else logging.WARNING,
            "claude pid %s lost: %s",
            self.process.pid if self.process else None,
            exc,
        )
        if not self.closing:
            self.needs_rebuild = True
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(exc)
        if self._frames is not None:
            self._frames.stop()
        if self._turn is not None:
            self._turn.on_lost(exc)

    def _dispatch(self, frame: dict[str, Any]) -> None:
        kind = frame.get("type")
        if kind == "control_response":
            self._on_control_response(frame)
        elif kind == "control_request":
            self._on_control_request(frame)
        elif kind == "system" and frame.get("subtype") == "init":
            self._on_init(frame)
        elif kind == "system":
            if self._turn is not None and frame.get("session_id") in (None, self.native_session_id):
                self._turn.mark_activity()  # system/status: the CLI is working on the prompt
        elif kind in TURN_FRAMES:
            session_id = frame.get("session_id")
            if session_id is not None and session_id != self.native_session_id:
                return  # another session's frame (§4.5)
            self._on_turn_frame(kind, frame)
        # system/status, rate_limit_event, keep_alive, control_cancel_request…: ignored.

    def _on_turn_frame(self, kind: str, frame: dict[str, Any]) -> None:
        turn = self._turn
        if kind == "result":
            if self._absorb_stray(frame, turn):
                return
            if turn is None:
                if self._starting:
                    self.startup_result = frame  # L3: `--resume` of an unknown session
                else:
                    log.info("claude result outside a turn ignored: %s", short(frame.get("subtype")))
                return
            if not turn.saw_activity:
                # The CLI answers every prompt with init/status frames before its result, so a
                # result ahead of them belongs to an earlier prompt (a duplicate terminal).
                log.info("claude result before the turn began ignored: %s", short(frame.get("subtype")))
                return
            turn.on_result(frame)
            return
        if turn is None:
            return  # history or an old turn's tail: nothing to report
        turn.mark_activity()
        if kind == "stream_event":
            turn.on_stream_event(frame)
        elif kind == "assistant":
            turn.on_assistant(frame)
        else:
            turn.on_user(frame)

    def _absorb_stray(self, frame: dict[str, Any], turn: ClaudeTurn | None) -> bool:
        """§4.6: after an interrupt raced a normal end, one extra `result` answers the interrupt.
        It is recognised as one that this turn cannot have produced: it comes before any frame of
        the turn, or it is an abort while this turn never interrupted."""
        if not self._stray_owed:
            return False
        if turn is None or not turn.saw_activity or (is_abort(frame) and not turn.interrupt_sent):
            self._stray_owed = False
            log.info("absorbed the stray claude result of an earlier interrupt (%s)", short(frame.get("subtype")))
            return True
        return False

    def _on_init(self, frame: dict[str, Any]) -> None:
        turn = self._turn
        failure = self._check_init(frame)
        if failure is None:
            self._note_mcp(frame.get("mcp_servers"))
            if turn is not None:
                turn.mark_activity()
            return
        log.warning("claude system/init rejected: %s", failure.message)
        self.needs_rebuild = True
        if turn is not None:
            turn.saw_activity = True
            if turn.terminal is None:
                turn.fail_now(failure)
                self.spawn(self.send_interrupt())  # stop the work of a session we will not use

    def _check_init(self, frame: dict[str, Any]) -> TurnFailed | None:
        session_id, cwd, mode = frame.get("session_id"), frame.get("cwd"), frame.get("permissionMode")
        if not isinstance(session_id, str) or not session_id or not isinstance(cwd, str):
            return TurnFailed(PROTOCOL_INVALID_MESSAGE, "system/init frame without session_id or cwd")
        if session_id != self.native_session_id:
            what = "resumed" if self.resuming else "launched"
            return TurnFailed(
                SESSION_NOT_AVAILABLE, f"Claude Code runs session {session_id}, not the {what} {self.native_session_id}"
            )
        if not same_path(cwd, self.profile.cwd):
            return TurnFailed(
                SESSION_NOT_AVAILABLE, f"Claude Code runs in {cwd!r}, not in the agent's cwd {self.profile.cwd!r}"
            )
        if mode != PERMISSION_MODE:
            return TurnFailed(
                NATIVE_POLICY_BLOCKED, f"Claude Code reports permission mode {mode!r}, not {PERMISSION_MODE!r}"
            )
        return None

    def _note_mcp(self, servers: Any) -> None:
        if not isinstance(servers, list):
            return
        for server in servers:
            if isinstance(server, dict) and server.get("name") == GROUPX_MCP_NAME:
                status = server.get("status")
                self.mcp_status = status if isinstance(status, str) else None
                self.mcp_verified = status == "connected"
                if status == "failed":
                    log.warning("Claude Code could not connect the GroupX MCP server")

    def _on_control_response(self, frame: dict[str, Any]) -> None:
        response = frame.get("response")
        if not isinstance(response, dict):
            raise ProtocolViolation(f"control_response without a response object: {frame!r:.200}")
        request_id = response.get("request_id")
        future = self._pending.pop(str(request_id), None)
        if future is None and not self._was_sent(request_id):
            # An answer to nothing we asked (D23): the CLI is out of step with us.
            raise ProtocolViolation(f"control_response to request id {request_id!r:.80}, which was never sent")
        if future is None or future.done():
            return  # e.g. the interrupt acknowledgement, which is never awaited
        if response.get("subtype") == "success":
            future.set_result(response.get("response"))
        else:
            error = response.get("error")
            code = response.get("error_code")
            future.set_exception(
                ControlRefused(str(error) if error is not None else "refused", code if isinstance(code, str) else None)
            )

    def _on_control_request(self, frame: dict[str, Any]) -> None:
        request_id = frame.get("request_id")
        request = frame.get("request")
        subtype = request.get("subtype") if isinstance(request, dict) else None
        if not isinstance(request_id, str):
            log.warning("claude control request without a request_id ignored: %s", short(subtype))
            return
        if subtype not in INTERACTIVE_SUBTYPES:
            # hook_callback, mcp_message, token refreshes…: a protocol error; the turn carries on.
            self.spawn(
                self._write(
                    {
                        "type": "control_response",
                        "response": {
                            "subtype": "error",
                            "request_id": request_id,
                            "error": f"Unsupported control request: {subtype}",
                        },
                    }
                )
            )
            return
        what = f"Claude Code sent a {subtype} request, which GroupX never answers with an approval"
        turn = self._turn
        interrupt = False
        if self._starting:
            if not self._start_fatal.done():
                self._start_fatal.set_result(DriverError(UNEXPECTED_NATIVE_INTERACTION, what))
        elif turn is not None and turn.cancel_requested:
            log.info("%s during a requested cancel: denied, turn left to finish", subtype)
        elif turn is not None:
            interrupt = turn.fail_for_interaction(TurnFailed(UNEXPECTED_NATIVE_INTERACTION, what))
        else:
            log.warning("%s outside a turn; the session will be rebuilt", subtype)
            self.needs_rebuild = True
        answer: dict[str, Any] = {"behavior": "deny", "message": DENY_MESSAGE}
        if subtype == "elicitation":
            answer["action"] = "cancel"  # what the real CLI reads from an elicitation answer

        async def settle() -> None:
            await self._write(
                {
                    "type": "control_response",
                    "response": {"subtype": "success", "request_id": request_id, "response": answer},
                }
            )
            if interrupt and turn is not None:
                await turn.send_interrupt()

        self.spawn(settle())

    # -- close ----------------------------------------------------------------------------------

    async def _close(self) -> None:
        timeouts = self.profile.timeouts
        turn = self._turn
        was_alive = self.alive
        self.closing = True  # an abort result or EOF from now on means "closed", not "cancelled"
        if was_alive and turn is not None and turn.terminal is None:
            try:
                await asyncio.wait_for(turn.send_interrupt(), timeouts.request_ms / 1000)
            except TimeoutError:
                log.info("interrupt write timed out during close")
        if self._background:
            await asyncio.wait(set(self._background), timeout=1.0)  # owed control responses
        if self.process is not None:
            try:
                await self.process.close(timeouts.close_ms)
            except ProcessTerminationError:
                log.error("claude process %s survived SIGKILL", self.process.pid)
        if turn is not None:
            turn.interrupt_for_close()
        for task in self._background:
            if not task.done():
                task.cancel()
        if self._frames is not None:
            self._frames.stop()

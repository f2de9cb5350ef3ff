"""The assistant's brain (FEATURES §13): one structured CLI session of the configured driver,
connected to ``/mcp/operator`` with a per-session token (``assistant/operator_binding.py``), and
the runs that answer the side chat, one at a time.

It reuses the agents' pieces without being an agent: the driver registry and its launch profile,
the secret-file directory of ``agents/sessions.py`` (D39), the lanes' event reader
(``agents.turn_collector``, with its timeouts and caps), and the instance rows
(``agents.instances``). It gets no Context Packet and writes no room event: its state is the
status of ``GET /api/assistant`` (``assistant/status.py``) and its answers are side-chat rows.

A start is tried 3 times with backoff, like an agent's (FEATURES §3). A run whose CLI crashed or
fell out of step stores a short failure message, and the session is replaced at once, so the next
message finds a ready brain; a start that fails leaves ``failed`` and the next message tries again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from dataclasses import dataclass

from django.conf import settings

from agents import instances, turn_collector
from agents.drivers import secret_file
from agents.drivers.base import DriverError, LaunchProfile, McpAttachment, NativeSession, NativeTurn, Timeouts
from agents.drivers.registry import get_driver
from agents.sessions import private_dir_path
from assistant import conversation, operator_binding, status
from assistant.prompt import brain_prompt
from groupx_site.core import listen
from groupx_site.store import db
from groupx_site.store.store_faults import StoreUnavailable
from rooms import system_errors
from setup_wizard.config import resolve_executable

logger = logging.getLogger("groupx.assistant")
START_ATTEMPTS = 3
BACKOFF_BASE_SECONDS = 0.4
OPERATOR_PATH = "/mcp/operator"


BRAIN_CONDITION = "assistant.brain"  # its public system.error (rooms/system_errors.py)


async def _public(call, *args) -> None:
    """A system.error about the brain; a store fault only loses the notice, never the run."""
    try:
        await db.write(call)(*args)
    except StoreUnavailable as fault:
        logger.warning("the room assistant's condition could not be made public: %s", fault.message)


@dataclass(frozen=True)
class BrainSpec:
    driver: str
    command: tuple[str, ...]
    cwd: str
    extra_instructions: str


def failure_text(code: str, message: str) -> str:
    return f"The assistant could not answer ({code}): {message}".strip()


class _RunHooks(turn_collector.TurnHooks):
    def __init__(self, brain: Brain, turn: NativeTurn):
        self.brain, self.turn = brain, turn

    async def timed_out(self, heard: bool) -> None:
        with contextlib.suppress(Exception):
            await self.turn.cancel()

    def deadline(self) -> float | None:
        return self.brain.cancel_deadline


class Brain:
    def __init__(self, spec: BrainSpec):
        self.spec = spec
        self.session: NativeSession | None = None
        self.instance_id: str | None = None
        self.token: str | None = None
        self.cancel_deadline: float | None = None
        self._session_lock = asyncio.Lock()
        self._turn_lock = asyncio.Lock()  # one run at a time: a CLI session answers one turn
        self._runs: dict[str, asyncio.Task] = {}  # user row → the run answering it
        self._cancelled: set[str] = set()
        self._current: tuple[str, NativeTurn] | None = None

    # ---- the session ----------------------------------------------------------------------------
    def _usable(self) -> bool:
        return self.session is not None and self.session.alive and not self.session.needs_rebuild

    async def start(self) -> None:
        """Start the session now (the room's start); a failure leaves ``failed`` with its reason."""
        status.set_status("starting")
        await self._renew()

    async def _renew(self) -> None:
        try:
            await self._ensure()
        except DriverError as error:
            status.set_status("failed", f"{error.code}: {error.message}")
        else:
            status.set_status("ready")

    async def _ensure(self) -> NativeSession:
        async with self._session_lock:
            if self._usable():
                return self.session
            await self._retire()
            last: DriverError | None = None
            for attempt in range(1, START_ATTEMPTS + 1):
                try:
                    self.session = await self._launch()
                    await _public(system_errors.resolve, BRAIN_CONDITION, "The room assistant's CLI started again.")
                    return self.session
                except DriverError as error:
                    last = error
                    logger.warning("assistant brain start %s/%s failed: %s", attempt, START_ATTEMPTS, error)
                    if not error.retryable or attempt == START_ATTEMPTS:
                        break
                    await asyncio.sleep(BACKOFF_BASE_SECONDS * 2 ** (attempt - 1))
            assert last is not None
            # Public once until a start works (PROTOCOL §14, docs/DECISIONS.md D89).
            await _public(
                system_errors.report,
                BRAIN_CONDITION,
                last.code,
                (
                    f"The room assistant's CLI could not start: {last.message}. The side chat answers once it "
                    "starts; check its command on Agent settings."
                ),
            )
            raise last

    async def _launch(self) -> NativeSession:
        spec = self.spec
        command = resolve_executable(spec.command)
        if command is None:
            raise DriverError(
                "ADAPTER_NOT_FOUND",
                f"the command {spec.command[0]!r} was not found or is not executable",
                retryable=False,
            )
        self.instance_id, self.token = await db.write(operator_binding.create_launch)(spec.driver, spec.cwd)
        timeouts = settings.GROUPX_CONFIG.timeouts
        profile = LaunchProfile(
            agent_id="assistant",
            actor_id=operator_binding.ASSISTANT_ACTOR_ID,
            driver=spec.driver,
            command=command,
            cwd=spec.cwd,
            instance_id=self.instance_id,
            binding_id=self.token,
            mcp=McpAttachment(url=f"{listen.origin()}{OPERATOR_PATH}", binding_id=self.token),
            timeouts=Timeouts(
                handshake_ms=timeouts.handshakeMs,
                request_ms=timeouts.requestMs,
                cancel_ms=timeouts.cancelMs,
                close_ms=timeouts.closeMs,
            ),
            private_dir=secret_file.private_directory(private_dir_path()),
        )
        try:
            session = await get_driver(spec.driver).start(profile)
        except DriverError:
            await self._close_rows("failed")
            raise
        try:
            await db.write(instances.mark_ready)(
                self.instance_id,
                self.token,
                native_session_id=session.native_session_id,
                mcp_verified=True,
                resumed=False,
            )
        except BaseException:
            await session.close()
            await self._close_rows("failed")
            raise
        return session

    async def _close_rows(self, how: str = "stopped") -> None:
        instance_id, token, self.instance_id, self.token = self.instance_id, self.token, None, None
        if instance_id and token:
            await db.write(instances.mark_closed)(instance_id, token, how)

    async def _retire(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            await session.close()
        await self._close_rows()

    async def close(self) -> None:
        for task in list(self._runs.values()):
            task.cancel()
        await asyncio.gather(*self._runs.values(), return_exceptions=True)
        async with self._session_lock:
            await self._retire()

    # ---- the runs -------------------------------------------------------------------------------
    async def run(self, user_message_id: str) -> None:
        """Answer ``user_message_id``; a second caller for the same row joins the run in flight."""
        await asyncio.shield(self.start_run(user_message_id))

    def start_run(self, user_message_id: str) -> asyncio.Task:
        """The run answering ``user_message_id``: the one in flight, or a new one. A request from a
        web process of split mode starts it without waiting (``assistant/brain_link.py``)."""
        task = self._runs.get(user_message_id)
        if task is None:
            task = asyncio.get_running_loop().create_task(
                self._answer(user_message_id), name=f"assistant:{user_message_id}"
            )
            self._runs[user_message_id] = task
            task.add_done_callback(lambda _t: self._runs.pop(user_message_id, None))
        return task

    def cancel(self, user_message_id: str) -> bool:
        if user_message_id not in self._runs:
            return False
        self._cancelled.add(user_message_id)
        if self._current is not None and self._current[0] == user_message_id:
            loop = asyncio.get_running_loop()
            self.cancel_deadline = loop.time() + settings.GROUPX_CONFIG.timeouts.cancelMs / 1000
            loop.create_task(self._current[1].cancel())
        return True

    async def _answer(self, user_message_id: str) -> None:
        async with self._turn_lock:
            try:
                await self._answer_now(user_message_id)
            except Exception as error:  # a fault of ours or of the store: this answer only fails
                logger.exception("assistant brain: the run for %s failed", user_message_id)
                status.set_status("ready" if self._usable() else "failed", f"the last answer failed: {error}")
                with contextlib.suppress(Exception):
                    await self._store(
                        user_message_id, failure_text("INTERNAL_ERROR", "internal error"), "failed", "INTERNAL_ERROR"
                    )
            finally:
                self._cancelled.discard(user_message_id)
                self._current, self.cancel_deadline = None, None

    async def _store(self, user_message_id: str, content: str, outcome: str = "answered", code: str = "") -> None:
        await db.write(conversation.store_reply)(user_message_id, content, outcome, code)

    async def _answer_now(self, user_message_id: str) -> None:
        if user_message_id in self._cancelled:
            return await self._store(user_message_id, "Cancelled before the assistant started.", "cancelled")
        if await db.read(conversation.reply_to)(user_message_id) is not None:
            return  # answered meanwhile (a run of another process, or a retry that raced this one)
        status.set_status("busy")
        content = await db.read(conversation.user_content)(user_message_id)
        try:
            session = await self._ensure()
        except DriverError as error:
            status.set_status("failed", f"{error.code}: {error.message}")
            return await self._store(user_message_id, failure_text(error.code, error.message), "failed", error.code)
        ending = await self._run_turn(session, user_message_id, content)
        await self._finish(user_message_id, ending)

    async def _run_turn(self, session: NativeSession, user_message_id: str, content: str) -> turn_collector.Ending:
        timeouts = settings.GROUPX_CONFIG.timeouts
        try:
            turn = await session.start_turn(
                f"assistant_{secrets.token_hex(8)}", brain_prompt(content, self.spec.extra_instructions)
            )
        except DriverError as error:
            return turn_collector.Ending(turn_collector.FAILED, error.code, error.message)
        self._current = (user_message_id, turn)
        return await turn_collector.collect(
            turn,
            turn_collector.Collected(),
            _RunHooks(self, turn),
            first_event_s=timeouts.firstEventMs / 1000,
            idle_s=timeouts.idleMs / 1000,
            logger=logger,
            label="assistant brain",
        )

    async def _finish(self, user_message_id: str, ending: turn_collector.Ending) -> None:
        cancelled = user_message_id in self._cancelled
        if ending.kind == turn_collector.COMPLETED and not cancelled:
            await self._store(user_message_id, ending.content or "")
        elif ending.kind == turn_collector.CANCELLED or cancelled:
            await self._store(user_message_id, "Cancelled.", "cancelled")
        else:
            code = ending.code or "PROTOCOL_INVALID_MESSAGE"
            await self._store(user_message_id, failure_text(code, ending.message or ending.what), "failed", code)
        if ending.out_of_step or (self.session is not None and (self.session.needs_rebuild or not self.session.alive)):
            # The CLI is gone or out of step: replace it now, like an agent's session, so the next
            # message finds a ready brain. The status stays busy meanwhile: a message sent now
            # waits for this run (it is not refused as "starting").
            logger.info("assistant brain: replacing the session after %s", ending.kind)
            await self._renew()
            return
        status.set_status("ready")

"""Pieces shared by the native drivers: the launch environment, path comparison, stderr
excerpts, ``ChildSession`` (the plumbing every session keeps the same way), and ``QueuedTurn``,
the event queue with a once-only terminal that every driver's turn builds on.

``QueuedTurn`` keeps the contract of ``base.NativeTurn``: ``events()`` ends after exactly one
terminal, whatever mix of native terminals, interaction failures, timers and connection losses
races to decide it. Its queue is bounded where it matters (D23): events always go in, so a
terminal is never refused, but while the backlog is over ``BACKLOG_EVENTS`` or
``BACKLOG_CHARACTERS`` the session's reader stops reading stdout (``ChildSession.pace_reader``),
and the OS pipe makes a CLI that outruns the room wait.
"""

from __future__ import annotations

import abc
import asyncio
import logging
import os
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any, Generic, TypeVar

from .base import (
    PROTOCOL_INVALID_MESSAGE,
    SESSION_NOT_AVAILABLE,
    TERMINAL_EVENTS,
    AdapterEvent,
    DriverError,
    LaunchProfile,
    NativeSession,
    NativeTurn,
    TurnFailed,
)
from .jsonrpc import ConnectionLost
from .process import JsonLineProcess
from .secret_file import SecretFile

log = logging.getLogger(__name__)

STDERR_EXCERPT = 2000
TEXT_LIMIT = 200  # titles, commands and error texts put in events are cut to this length
FINISHED_TURN_IDS = 256  # native turn ids remembered to drop their late frames (§2.6)
# The per-Turn transient backlog between the CLI reader and the lane. A frame is dispatched whole,
# so the backlog can pass these by one frame's events (a frame is at most the line limit).
BACKLOG_EVENTS = 256
BACKLOG_CHARACTERS = 256 * 1024
_EVENT_OVERHEAD = 64  # what an event without text is counted as, in characters


def launch_env(profile: LaunchProfile) -> dict[str, str] | None:
    """``profile.env`` overlays the server's environment; None inherits it unchanged (§1.4).
    Nothing is added: GroupX never sets IS_SANDBOX or any other variable on its own."""
    return None if profile.env is None else {**os.environ, **profile.env}


def same_path(a: str, b: str) -> bool:
    """Paths equal after resolving symlinks (and case on Windows), as the CLIs report resolved cwds."""
    return os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b))


def short(value: Any, limit: int = TEXT_LIMIT) -> str | None:
    return value[:limit] if isinstance(value, str) else None


async def stderr_excerpt(process: JsonLineProcess | None) -> str:
    """The last words of a child that died, bounded; empty when it said nothing."""
    if process is None:
        return ""
    await process.settle_stderr(0.5)
    return process.stderr_tail.strip()[-STDERR_EXCERPT:]


class RecentIds:
    """A bounded set of ids, oldest forgotten first."""

    def __init__(self, limit: int = FINISHED_TURN_IDS):
        self._order: deque[str] = deque()
        self._set: set[str] = set()
        self._limit = limit

    def add(self, value: str) -> None:
        if value in self._set:
            return
        self._order.append(value)
        self._set.add(value)
        while len(self._order) > self._limit:
            self._set.discard(self._order.popleft())

    def __contains__(self, value: object) -> bool:
        return value in self._set


TurnT = TypeVar("TurnT", bound="QueuedTurn")
WrittenT = TypeVar("WrittenT")


class ChildSession(NativeSession, Generic[TurnT]):
    """What every driver's session keeps the same way: its child process (and stderr), the
    start-fatal future the handshake races against, the one active-turn slot, fire-and-forget
    tasks, and a close that runs once however often it is called. Subclasses write ``_close``."""

    def __init__(self, profile: LaunchProfile):
        self.profile = profile
        self.resumed = False
        self.mcp_verified = False
        self.needs_rebuild = False
        self.process: JsonLineProcess | None = None
        self.closing = False
        self._starting = True
        self._start_fatal: asyncio.Future[DriverError] = asyncio.get_running_loop().create_future()
        self._turn: TurnT | None = None
        self._close_task: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self.secret_file: SecretFile | None = None  # the CLI's secrets on disk, removed at close (D39)

    @property
    def stderr_tail(self) -> str:  # type: ignore[override]
        return self.process.stderr_tail if self.process is not None else ""

    @property
    def text_repaired(self) -> int:
        return self.process.text_repaired if self.process is not None else 0

    def pace_reader(self) -> Awaitable[None] | None:
        """The reader's ``pace``: while the active turn's backlog is full, what to wait on; else
        None, so the usual frame costs no coroutine."""
        turn = self._turn
        if turn is not None and turn.holds_reader:
            return turn.wait_for_room()
        return None

    @property
    def active_turn(self) -> TurnT | None:
        return self._turn

    @property
    def start_fatal(self) -> asyncio.Future[DriverError]:
        """Set by the session when start-time evidence (an interaction, a policy marker) makes
        the start hopeless; the driver's handshake races every step against it."""
        return self._start_fatal

    def check_turn_slot(self, cli: str) -> None:
        """SESSION_NOT_AVAILABLE unless the session can take a turn now: started, alive, not
        marked for a rebuild, and with no other turn active."""
        if self._starting or not self.alive or self.needs_rebuild:
            raise DriverError(SESSION_NOT_AVAILABLE, f"{cli} session is not usable")
        if self._turn is not None:
            raise DriverError(SESSION_NOT_AVAILABLE, f"{cli} session already runs turn {self._turn.turn_id}")

    async def write_prompt(self, turn: TurnT, write: Callable[[], Awaitable[WrittenT]], what: str) -> WrittenT:
        """Make ``turn`` the active one and write its prompt with ``write``. The slot is taken
        first, as the CLI may answer before the write returns; a prompt that cannot be written
        frees it again."""
        self._turn = turn
        try:
            return await write()
        except ConnectionLost as exc:
            self._turn = None
            raise DriverError(SESSION_NOT_AVAILABLE, f"could not send {what}: {exc}") from exc
        except ValueError as exc:
            self._turn = None
            raise DriverError(PROTOCOL_INVALID_MESSAGE, f"prompt cannot be encoded: {exc}", retryable=False) from exc

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run ``coro`` in the background; it is cancelled when the session closes."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def close(self) -> None:
        if self._close_task is None:
            self._close_task = asyncio.ensure_future(self._close_and_forget_secrets())
        await asyncio.shield(self._close_task)

    async def _close_and_forget_secrets(self) -> None:
        try:
            await self._close()
        finally:
            if self.secret_file is not None:
                self.secret_file.remove()

    @abc.abstractmethod
    async def _close(self) -> None:
        """The driver's bounded close (NativeSession.close)."""


class QueuedTurn(NativeTurn):
    """Adapter events go through a queue; the terminal is decided once by ``_finish``.

    Subclasses implement ``_poison`` (mark the session for a rebuild) and ``_finished`` (the
    session forgets the turn).
    """

    def __init__(self, turn_id: str):
        self.turn_id = turn_id
        # A deque and one waiter, not an asyncio.Queue: one reader, and most events are taken
        # without waiting (``ready_event``), so the queue's getter/putter machinery is not needed.
        self._events: deque[AdapterEvent] = deque()
        self._arrived: asyncio.Future[None] | None = None  # the reader waiting in ``events``
        self.terminal: AdapterEvent | None = None
        self.cancel_requested = False  # by the runtime, as opposed to our own interaction cancel
        self._failure: TurnFailed | None = None  # decided early; emitted once the native turn settles
        self._timer: asyncio.TimerHandle | None = None
        self._done = asyncio.Event()
        self._backlog_events = 0
        self._backlog_characters = 0
        self._room = asyncio.Event()
        self._room.set()
        self._abandoned = False

    async def events(self) -> AsyncIterator[AdapterEvent]:
        while True:
            event = self.ready_event()
            if event is None:
                self._arrived = asyncio.get_running_loop().create_future()
                try:
                    await self._arrived
                finally:
                    self._arrived = None
                continue
            yield event
            if isinstance(event, TERMINAL_EVENTS):
                return

    def ready_event(self) -> AdapterEvent | None:
        if not self._events:
            return None
        event = self._events.popleft()
        self._count_backlog(event, -1)
        return event

    @property
    def holds_reader(self) -> bool:
        """The backlog is over its bounds and someone will still drain it."""
        return not self._room.is_set() and self.terminal is None and not self._abandoned

    async def wait_for_room(self) -> None:
        """Return once the backlog is under its bounds, or nobody will drain it any more."""
        while self.holds_reader:
            await self._room.wait()

    def abandon(self) -> None:
        self._abandoned = True
        kept = [e for e in self._take_all() if isinstance(e, TERMINAL_EVENTS)]
        for event in kept:
            self._enqueue(event)
        self._room.set()

    def _take_all(self) -> list[AdapterEvent]:
        out = []
        while (event := self.ready_event()) is not None:
            out.append(event)
        return out

    def _enqueue(self, event: AdapterEvent) -> None:
        self._events.append(event)
        self._count_backlog(event, 1)
        arrived = self._arrived
        if arrived is not None and not arrived.done():
            arrived.set_result(None)

    def _count_backlog(self, event: AdapterEvent, sign: int) -> None:
        self._backlog_events += sign
        self._backlog_characters += sign * (len(getattr(event, "text", "")) + _EVENT_OVERHEAD)
        if self._backlog_events < BACKLOG_EVENTS and self._backlog_characters < BACKLOG_CHARACTERS:
            self._room.set()
        else:
            self._room.clear()

    async def wait_terminal(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self._done.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def _emit(self, event: AdapterEvent) -> None:
        if self.terminal is None and not self._abandoned:
            self._enqueue(event)

    def _arm(self, ms: int, failure: TurnFailed) -> None:
        """Unless a terminal arrives within ``ms``, fail with ``failure`` and poison the session:
        a native turn that does not settle leaves the CLI out of step with us."""

        def expire() -> None:
            if self.terminal is None:
                log.warning("turn %s: the native turn did not settle within %s ms", self.turn_id, ms)
                self._poison()
                self._finish(failure)

        if self.terminal is None and self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(ms / 1000, expire)

    def _fail_early(self, failure: TurnFailed, cancel_ms: int) -> bool:
        """The turn failed natively (an interaction); the caller interrupts the native turn and the
        failure is emitted once it settles, so the session stays usable. False if the
        outcome was already decided."""
        if self.terminal is not None or self._failure is not None:
            return False
        self._failure = failure
        if self._timer is not None:  # a pending cancel timer: the failure now takes its place
            self._timer.cancel()
            self._timer = None
        self._arm(cancel_ms, failure)
        return True

    def _finish(self, event: AdapterEvent) -> None:
        if self.terminal is not None:
            return
        self.terminal = event
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._enqueue(event)  # a terminal always gets in, however full the backlog
        self._room.set()
        self._done.set()
        self._finished()

    @abc.abstractmethod
    def _poison(self) -> None:
        """Mark the session unusable (the driver's own rule)."""

    @abc.abstractmethod
    def _finished(self) -> None:
        """Release the session's active-turn slot."""

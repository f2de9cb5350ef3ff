"""The process side of the lease (``agents/lease.py``; PROTOCOL §10.6, docs/DECISIONS.md D45, D58).

A ``LeaseKeeper`` gets the lease (``claim`` in the embedded default, where the port bind already
decided; ``acquire`` for a split-mode worker, which stands by until it holds the room's lease or
one of the agents it wants), then renews it every heartbeat (a worker's heartbeat also takes
whatever it wants that has no live holder, and tells ``on_change``) and writes the agents' health
beside it whenever it changed, so web processes show what the worker sees. A keeper that finds its lease gone, or that could not renew it before
it expired (the process stalled; a worker only, as the embedded default's lease is its port),
calls ``on_lost`` at once: that process must stop its agents, because another one may already run
them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from agents import health, lease
from groupx_site.store import db
from groupx_site.store.store_faults import StoreUnavailable

logger = logging.getLogger("groupx.lease")


class LeaseLost(RuntimeError):
    """Another process owns the room's agents now."""


class LeaseKeeper:
    """``wanted``: the agents (actor ids) this process runs when it holds their leases; a worker
    also takes the room's lease whenever no owner is live (D58). ``on_change`` is told of every
    change in what a worker holds (an agent taken, or lost while the worker lives on)."""

    def __init__(
        self,
        mode: str,
        on_lost: Callable[[], Awaitable[None]],
        wanted: list[str] | None = None,
        on_change: Callable[[lease.Holdings], Awaitable[None]] | None = None,
    ):
        self.me = lease.Me.here(mode)
        self.on_lost = on_lost
        self.wanted = list(wanted or [])
        self.on_change = on_change
        self.holdings = lease.Holdings(alive=True)
        self._changed = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._stop_listening: Callable[[], None] | None = None
        self._renewed_at = 0.0  # monotonic time of the last heartbeat that kept the lease
        self._beaten_at = 0.0  # monotonic time of a worker's last full beat (lease.beat)
        self._closing = False
        self._changes: set[asyncio.Task] = set()
        self._applied: tuple[bool, frozenset[str]] | None = None  # what on_change last started (or the start)

    def _change_done(self, task: asyncio.Task) -> None:
        self._changes.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._applied = None  # the next beat hands it on again
            logger.error(
                "starting or stopping what the lease changed failed; trying again at the next beat",
                exc_info=task.exception(),
            )

    async def claim(self) -> None:
        await db.write(lease.claim)(self.me, self.wanted)
        self.holdings = lease.Holdings(alive=True, room=True, agents=frozenset(self.wanted))
        self._renewed_at = time.monotonic()

    async def acquire(self) -> dict:
        """Stand by until this worker holds the room's lease or one of its agents'; returns the
        room's owner we replaced (empty: none, or the room is not ours)."""
        announced = False
        while True:
            try:
                holdings = await db.write(lease.beat)(self.me, self.wanted)
            except StoreUnavailable as fault:
                logger.warning("the lease could not be read (%s); trying again", fault.message)
                holdings = None
            if holdings is not None and (holdings.room or holdings.agents):
                self._took(holdings)
                self._applied = (holdings.room, holdings.agents)  # the runtime's own start runs these
                return holdings.replaced or {}
            if not announced:
                logger.info("another worker owns the room's agents: %s stands by", self.me.worker_id)
                announced = True
            await asyncio.sleep(lease.heartbeat_seconds())  # a standby's poll; the lease is in the store

    def _took(self, holdings: lease.Holdings) -> None:
        self._renewed_at = time.monotonic()
        before, self.holdings = self.holdings, holdings
        if holdings.room and not before.room:
            replaced = holdings.replaced
            logger.info(
                "this worker owns the room's agents (%s)%s",
                self.me.worker_id,
                f"; it replaced {replaced['workerId']}" if replaced else "",
            )
        if holdings.agents - before.agents:
            logger.info(
                "this worker runs agents %s (%s)", ", ".join(sorted(holdings.agents - before.agents)), self.me.worker_id
            )

    def keep(self) -> None:
        """Renew the lease in the background from now on, and publish health changes."""
        loop = asyncio.get_running_loop()
        self._stop_listening = health.on_change(lambda: loop.call_soon_threadsafe(self._changed.set))
        self._changed.set()  # the first heartbeat carries the health as it is
        self._task = loop.create_task(self._keep(), name="lease-heartbeat")

    async def _keep(self) -> None:
        while not self._closing:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout=lease.heartbeat_seconds())
            if self._closing:
                return
            if self.me.mode == "worker" and time.monotonic() - self._renewed_at >= lease.expiry_seconds():
                # We did not renew in time (a stall): another worker may own the agents already.
                return await self._lost("not renewed before it expired")
            snapshot = None
            if self._changed.is_set():
                self._changed.clear()
                snapshot = health.all_snapshots()
            try:
                # A heartbeat's one-row UPDATE may fit where a real write would not (a full disk):
                # it must not tell health the store takes writes again (D24).
                # A worker's full beat (it tries to take leases: several statements) runs once per
                # heartbeat; a health change in between is one UPDATE, so a web process sees it as
                # soon as before (the side chat's answer reads the brain's published status).
                if self.me.mode == "worker" and time.monotonic() - self._beaten_at >= lease.heartbeat_seconds():
                    self._beaten_at = time.monotonic()
                    holdings = await db.write(lease.beat, clears_faults=False)(self.me, self.wanted, snapshot)
                    kept = holdings.alive
                else:
                    holdings, kept = None, await db.write(lease.heartbeat, clears_faults=False)(self.me, snapshot)
            except StoreUnavailable as fault:
                logger.warning("the lease could not be renewed (%s)", fault.message)
                if snapshot is not None:
                    self._changed.set()  # written with the next heartbeat that gets through
                await asyncio.sleep(lease.heartbeat_seconds())  # the next beat, not at once
                continue
            if not kept:
                return await self._lost("another worker took it")
            self._renewed_at = time.monotonic()
            if holdings is not None:
                self._hand_on(holdings)

    def _hand_on(self, holdings: lease.Holdings) -> None:
        """Tell ``on_change`` what we hold now when it differs from what it last started, in a task
        (a slow agent start must not stop the heartbeat), one at a time; a change whose start
        failed (a store fault) is handed on again at a later beat."""
        if (holdings.room, holdings.agents) != (self.holdings.room, self.holdings.agents):
            self._took(holdings)
        if self.on_change is None or self._changes or self._applied == (holdings.room, holdings.agents):
            return
        self._applied = (holdings.room, holdings.agents)
        task = asyncio.get_running_loop().create_task(self.on_change(holdings), name="lease-change")
        self._changes.add(task)
        task.add_done_callback(self._change_done)

    async def _lost(self, why: str) -> None:
        logger.error("this process lost the lease of the room's agents (%s): its agents stop now", why)
        self._unlisten()
        await self._cancel_changes()
        await self.on_lost()

    async def _cancel_changes(self) -> None:
        changes = [task for task in self._changes if task is not asyncio.current_task()]
        for task in changes:
            task.cancel()
        await asyncio.gather(*changes, return_exceptions=True)

    def _unlisten(self) -> None:
        if self._stop_listening is not None:
            self._stop_listening()
            self._stop_listening = None

    async def release(self) -> None:
        """A clean stop: end the heartbeat and the lease (a standby takes over at its next try)."""
        self._unlisten()
        # A flag, not task.cancel(): Python 3.11's wait_for swallows a cancel that arrives as the
        # event it waits for is set (the agents' health changes while they close), and the loop
        # went on beating for ever.
        self._closing = True
        self._changed.set()
        if self._task is not None and self._task is not asyncio.current_task():
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._cancel_changes()
        with contextlib.suppress(StoreUnavailable):
            await db.write(lease.release)(self.me)

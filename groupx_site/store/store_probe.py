"""Does the store take writes? A cheap, bounded answer for ``/api/health`` (docs/DECISIONS.md D24).

A full or read-only store still answers reads (``PRAGMA journal_mode``), so health asks two things:
the last fault a database call met (``store_faults``; a committed write clears it), and a *real*
write probe: rewrite the database header's ``user_version`` with its own value on a connection of
its own. That commits one page to the WAL, so it fails exactly as a write would on a full disk
(when the WAL must grow), a read-only file system, or a lock held by another process.

Bounded: at most one probe a second while a fault is remembered or the runtime is not ready (to
see the fault end), otherwise one every ten seconds (to see one start when nothing writes); other
health calls reuse the last answer. The probe waits at most 100 ms for the write lock: our own
write transactions take milliseconds, so a lock held longer than that refreshes a remembered
"locked" fault, but is only recorded as one by a real write that gave up after the busy timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from django.conf import settings

from groupx_site.core import sqlite
from groupx_site.store import store_faults

T = TypeVar("T")

PROBE_WHILE_FAULTY_SECONDS = 1.0
PROBE_WHILE_HEALTHY_SECONDS = 10.0
PROBE_LOCK_WAIT_SECONDS = 0.1

_lock = threading.Lock()
_last_probe = 0.0


def check(*, suspect: bool) -> store_faults.Fault | None:
    """The store's current fault, or None. ``suspect``: probe at the faster pace (not ready)."""
    global _last_probe
    faulty = suspect or store_faults.current() is not None
    interval = PROBE_WHILE_FAULTY_SECONDS if faulty else PROBE_WHILE_HEALTHY_SECONDS
    now = time.monotonic()
    if now - _last_probe >= interval and _lock.acquire(blocking=False):  # one probe at a time
        try:
            _last_probe = now
            _probe()
        finally:
            _lock.release()
    return store_faults.current()


def _probe() -> None:
    if settings.DATABASES["default"]["ENGINE"] != sqlite.ENGINE:
        _probe_postgresql()
        return
    path = str(settings.DATABASES["default"]["NAME"])
    if not os.path.exists(path):
        return  # not migrated yet: the start creates it
    try:
        # mode=rw: never create the file (a fresh store is created by migrate, not by health).
        db = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=PROBE_LOCK_WAIT_SECONDS, isolation_level=None)
    except sqlite3.Error as error:
        _remember(error)
        return
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        db.execute(f"PRAGMA user_version = {int(version)}")  # same value: a real commit that changes nothing
    except sqlite3.Error as error:
        _remember(error)
    else:
        store_faults.clear()
    finally:
        db.close()


def _probe_postgresql() -> None:
    """PostgreSQL's counterpart (D53): a transaction that takes a transaction id commits only on a
    server that accepts writes (not in recovery, not read-only). A full disk shows on the next real
    write instead (53100), which records the fault as on SQLite."""
    from django.db import DatabaseError, connection

    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_current_xact_id()")
    except DatabaseError as error:
        _remember(error)
    else:
        store_faults.clear()


def _remember(error: Exception) -> None:
    current = store_faults.current()
    if store_faults.classify(error) == "locked" and (current is None or current.kind != "locked"):
        return  # a lock held for 100 ms is not yet a fault (see above)
    store_faults.as_store_unavailable(error)  # remembers it


# ---- background work waits for the store ------------------------------------------------------


async def store_back(backoff: store_faults.Backoff, wake: asyncio.Event | None = None) -> None:
    """Wait, backing off, until the write probe passes (or ``wake`` is set: new work, which a
    write that got through committed). Background retries wait here rather than on the writer
    thread: with another process holding the lock, each write there would hold the one writer
    thread for the whole busy timeout, ahead of the user's requests."""
    while True:
        delay = backoff.next_delay()
        if wake is None:
            await asyncio.sleep(delay)
        else:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), timeout=delay)
            if wake.is_set():
                return
        if await asyncio.to_thread(check, suspect=True) is None:
            return


async def until_available(call: Callable[[], Awaitable[T]], *, what: str, logger: logging.Logger) -> T:
    """Await ``call()`` until it gets past STORE_UNAVAILABLE: for writes that must not be lost
    (a Turn's outcome), whose caller has nothing better to do meanwhile. Cancellable."""
    backoff = store_faults.Backoff()
    while True:
        try:
            return await call()
        except store_faults.StoreUnavailable as fault:
            logger.warning("%s waits: %s", what, fault.message)
            await store_back(backoff)

"""Store faults as codes, not crashes (docs/DECISIONS.md D24).

A full disk, a read-only database, a write lock held by another process past the busy timeout,
an I/O error or a database file that cannot be opened are *faults of the store*, not bugs: the
request that met one gets 503 ``STORE_UNAVAILABLE`` naming the fault, with ``Retry-After``, and
wrote nothing (its transaction rolled back). The process remembers the last fault a database
call met, so ``/api/health`` can say "degraded" while it lasts; the next write that commits
clears it (``groupx_site/store/db.py``, ``groupx_site/store/store_probe.py``).

Background work (lanes, the runtime's start, schedulers) waits with ``Backoff`` and tries again
(``groupx_site/store/store_probe.py``: ``store_back``, ``until_available``).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import DatabaseError

from groupx_site.core import sqlite
from groupx_site.core.errors import GroupXError

RETRY_AFTER_SECONDS = 5  # the default busy timeout, and the ceiling of the background backoff

# SQLite's primary result codes (``sqlite3.Error.sqlite_errorname``, extended names start with
# these) and, for errors that do not carry one, the message SQLite gives.
_BY_ERROR_NAME = {
    "SQLITE_FULL": "disk_full",
    "SQLITE_READONLY": "read_only",
    "SQLITE_BUSY": "locked",
    "SQLITE_LOCKED": "locked",
    "SQLITE_IOERR": "io_error",
    "SQLITE_CANTOPEN": "cannot_open",
}
_BY_MESSAGE = {
    "database or disk is full": "disk_full",
    "attempt to write a readonly database": "read_only",
    "database is locked": "locked",
    "database table is locked": "locked",
    "disk i/o error": "io_error",
    "unable to open database file": "cannot_open",
}
# PostgreSQL's SQLSTATEs (``psycopg.Error.sqlstate``; a two-character key is a whole class), and
# the messages of the driver's own connection errors, which carry none (docs/DECISIONS.md D53).
_BY_SQLSTATE = {
    "53100": "disk_full",
    "25006": "read_only",
    "55P03": "locked",  # lock_timeout, the busy timeout's counterpart (groupx_site/store/postgresql.py)
    "40P01": "locked",  # a deadlock: the transaction was rolled back and may be retried
    "58030": "io_error",
    "08": "cannot_open",  # connection exceptions
    "57P01": "cannot_open",  # admin_shutdown
    "57P02": "cannot_open",  # crash_shutdown
    "57P03": "cannot_open",  # cannot_connect_now (starting up, shutting down)
    "53300": "cannot_open",  # too_many_connections
}
_BY_DRIVER_MESSAGE = (
    "connection failed",
    "connection is lost",
    "connection is closed",
    "server closed the connection",
    "consuming input failed",
    "terminating connection",
)
DESCRIPTIONS = {
    "disk_full": "the disk is full",
    "read_only": "the database is read-only",
    "locked": "the database is locked by another process",
    "io_error": "the disk reported an I/O error",
    "cannot_open": "the database file cannot be opened",
}


class StoreUnavailable(GroupXError):
    """A store fault, as the protocol's retryable 503."""

    def __init__(self, kind: str):
        super().__init__(
            "STORE_UNAVAILABLE",
            f"the store is unavailable: {DESCRIPTIONS[kind]}; try again later",
            details={"fault": kind},
        )
        self.kind = kind
        self.headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}


def classify(error: BaseException) -> str | None:
    """The fault kind of a database error, or None when it is not a store fault (a bug)."""
    for candidate in (error, error.__cause__):
        if candidate is None:
            continue
        if kind := _postgresql_kind(candidate):
            return kind
        name = getattr(candidate, "sqlite_errorname", None) or ""
        for prefix, kind in _BY_ERROR_NAME.items():
            if name == prefix or name.startswith(prefix + "_"):
                return kind
        message = str(candidate).lower()
        for text, kind in _BY_MESSAGE.items():
            if text in message:
                return kind
    return None


def _postgresql_kind(error: BaseException) -> str | None:
    if not type(error).__module__.startswith("psycopg"):
        return None
    state = getattr(error, "sqlstate", None) or ""
    if state:
        return _BY_SQLSTATE.get(state) or _BY_SQLSTATE.get(state[:2])
    message = str(error).lower()
    return "cannot_open" if any(text in message for text in _BY_DRIVER_MESSAGE) else None


def as_store_unavailable(error: BaseException) -> StoreUnavailable | None:
    """``error`` as STORE_UNAVAILABLE (and remembered) when it is a store fault, else None."""
    if isinstance(error, StoreUnavailable):
        return error
    if not isinstance(error, DatabaseError | sqlite3.Error):
        return None
    kind = classify(error)
    if kind is None:
        return None
    if kind == "cannot_open" and store_folder_is_read_only():
        kind = "read_only"  # SQLite could not create the WAL's -shm/-wal files next to the database
    record(kind)
    return StoreUnavailable(kind)


def store_folder_is_read_only() -> bool:
    from django.conf import settings

    if settings.DATABASES["default"]["ENGINE"] != sqlite.ENGINE:
        return False  # a PostgreSQL server reports a read-only store itself (25006)
    try:
        return bool(os.statvfs(Path(str(settings.DATABASES["default"]["NAME"])).parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


# ---- the last fault seen ----------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    kind: str
    since: float  # time.time() of the first failure of this run of faults
    last_seen: float

    def as_json(self) -> dict[str, Any]:
        return {
            "fault": self.kind,
            "faultMessage": DESCRIPTIONS[self.kind],
            "faultSince": _iso(self.since),
            "faultLastSeen": _iso(self.last_seen),
        }


_lock = threading.Lock()
_current: Fault | None = None


def record(kind: str) -> None:
    global _current
    now = time.time()
    with _lock:
        since = _current.since if _current is not None and _current.kind == kind else now
        _current = Fault(kind, since, now)


def clear() -> None:
    global _current
    if _current is None:  # the hot path: one attribute read, no lock
        return
    with _lock:
        _current = None


def current() -> Fault | None:
    return _current


def _iso(moment: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="milliseconds")


# ---- waiting for the store to come back -------------------------------------------------------


class Backoff:
    """0.2 s, doubling, at most 5 s: quick to notice a short fault, cheap during a long one."""

    FIRST_SECONDS = 0.2
    MAX_SECONDS = 5.0

    def __init__(self) -> None:
        self.failures = 0

    def next_delay(self) -> float:
        self.failures += 1
        return min(self.MAX_SECONDS, self.FIRST_SECONDS * 2.0 ** (self.failures - 1))

    def reset(self) -> None:
        self.failures = 0

"""Process-wide readiness: starting → ready → closing (or failed), and how the start is going.

A start that met a store fault stays ``starting`` and tries again with backoff
(``groupx_site/process_runtime.py``); ``start_retry`` says so in ``/api/health`` meanwhile.

The REST writes in flight are counted here too: once readiness is ``closing`` no new one is
admitted (503 ``STORE_UNAVAILABLE``), and the stop waits, bounded, for the ones already admitted
before it closes the runtime (PROTOCOL §10.8), so none reaches the writer after the sessions
began to close.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from typing import Any

_readiness = "starting"
_start_attempts = 0
_next_retry_at: float | None = None  # time.monotonic()
_last_error: dict[str, str] | None = None
_superseded: dict[str, Any] | None = None  # set once another process took the room's agents over (D90)
_writes_in_flight = 0
_no_writes_in_flight: asyncio.Event | None = None  # made on the loop by the first write


def readiness() -> str:
    return _readiness


def set_readiness(value: str) -> None:
    global _readiness
    _readiness = value


def supersede(owner: dict[str, Any] | None) -> None:
    """Another process took the room's lease (``owner``: its lease row as health shows it, None
    when the lease simply lapsed): this one runs nothing from now on and says so."""
    global _superseded
    if owner is not None:
        by = f"GroupX process {owner.get('pid')} on {owner.get('host')} ({owner.get('mode')})"
        message = f"this instance was superseded: {by} took the room over; stop this one (`groupx stop`)"
    else:
        message = "this instance lost the room's lease (not renewed in time); its agents stopped; restart it"
    _superseded = {"by": owner, "message": message}


def superseded() -> dict[str, Any] | None:
    """``{by, message}`` once this process lost the room to another (or its lease lapsed); else None."""
    return _superseded


def start_attempt_failed(code: str, message: str, retry_in_seconds: float | None) -> None:
    global _start_attempts, _next_retry_at, _last_error
    _start_attempts += 1
    _last_error = {"code": code, "message": message}
    _next_retry_at = None if retry_in_seconds is None else time.monotonic() + retry_in_seconds


def start_retry() -> dict[str, Any] | None:
    """``{startAttempts, nextRetryMs, lastError}`` while a failed start waits or retries; else None."""
    if _last_error is None or _readiness in ("ready", "closing"):
        return None
    info: dict[str, Any] = {"startAttempts": _start_attempts, "lastError": _last_error}
    if _next_retry_at is not None:
        info["nextRetryMs"] = max(0, round((_next_retry_at - time.monotonic()) * 1000))
    return info


@contextlib.contextmanager
def write_in_flight() -> Iterator[None]:
    """Count one admitted REST write for as long as it runs (on the event loop: the admission
    check before it and this count are one step, with no ``await`` between them)."""
    global _writes_in_flight, _no_writes_in_flight
    if _no_writes_in_flight is None:
        _no_writes_in_flight = asyncio.Event()
    _writes_in_flight += 1
    _no_writes_in_flight.clear()
    try:
        yield
    finally:
        _writes_in_flight -= 1
        if _writes_in_flight == 0:
            _no_writes_in_flight.set()


def writes_in_flight() -> int:
    return _writes_in_flight


async def wait_for_writes_in_flight(timeout: float) -> bool:
    """Wait until every admitted write has answered, at most ``timeout`` seconds; True if they did."""
    if _writes_in_flight == 0 or _no_writes_in_flight is None:
        return True
    try:
        await asyncio.wait_for(_no_writes_in_flight.wait(), timeout)
    except TimeoutError:
        return False
    return True

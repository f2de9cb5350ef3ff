"""Process-wide readiness: starting → ready → closing (or failed), and how the start is going.

A start that met a store fault stays ``starting`` and tries again with backoff
(``groupx_site/runtime.py``); ``start_retry`` says so in ``/api/health`` meanwhile.
"""

from __future__ import annotations

import time

_readiness = "starting"
_start_attempts = 0
_next_retry_at: float | None = None  # time.monotonic()
_last_error: dict[str, str] | None = None


def readiness() -> str:
    return _readiness


def set_readiness(value: str) -> None:
    global _readiness
    _readiness = value


def start_attempt_failed(code: str, message: str, retry_in_seconds: float | None) -> None:
    global _start_attempts, _next_retry_at, _last_error
    _start_attempts += 1
    _last_error = {"code": code, "message": message}
    _next_retry_at = None if retry_in_seconds is None else time.monotonic() + retry_in_seconds


def start_retry() -> dict | None:
    """``{startAttempts, nextRetryMs, lastError}`` while a failed start waits or retries; else None."""
    if _last_error is None or _readiness in ("ready", "closing"):
        return None
    info: dict = {"startAttempts": _start_attempts, "lastError": _last_error}
    if _next_retry_at is not None:
        info["nextRetryMs"] = max(0, round((_next_retry_at - time.monotonic()) * 1000))
    return info

"""In-process agent health (FEATURES §3): what bootstrap, /api/health and the room show.

Status values: ``stopped | starting | ready | degraded | failed | native_policy_blocked``.
The runtime updates it; readers get a copy. The process that owns the agents also stores it beside
its lease on every change (``on_change``, ``agents/lease_keeper.py``), which is where a web process
of split mode reads it (docs/DECISIONS.md D45).

``degraded`` (docs/DECISIONS.md D42): the agent's sessions failed ``DEGRADED_AFTER_FAILURES`` times
in a row since it last completed a Turn (failed starts and sessions lost under a Turn alike), and
GroupX still tries again (its next Turn starts it anew). ``failed``: the last failure was one no
retry can fix (a command that is not there, a refused argv) and fewer failures came before. The
agent's next completed Turn resets the count, so it is ``ready`` again.

``lastError`` is the agent's last failure: a start that failed, or a session lost with its Turn
(a crash, a protocol fault, a timeout that left the CLI out of step). It outlives the rebuilt
session, whose status says ``ready`` again, and is cleared by the next Turn the agent completes
(docs/DECISIONS.md D38). A failed start is counted by ``session_failed``; a session lost under a Turn is
``record_failure``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.utils import timezone

# FEATURES §3: a session start is tried 3 times; failures that use up one whole start are
# "repeated", and the next start is left to the agent's next Turn.
DEGRADED_AFTER_FAILURES = 3

_state: dict[str, dict[str, Any]] = {}
_failures: dict[str, int] = {}  # consecutive session failures per agent
_lock = threading.Lock()
ERROR_MESSAGE_CHARACTERS = 500
# Who keeps the health where other processes read it (agents/lease_keeper.py): told of every change.
_change_listeners: list[Callable[[], None]] = []


def _now() -> str:
    return timezone.now().isoformat(timespec="milliseconds")


def update(actor_id: str, **fields: Any) -> None:
    with _lock:
        entry = _state.setdefault(actor_id, {"status": "stopped"})
        entry.update(fields)
        entry["updatedAt"] = _now()
    for listener in list(_change_listeners):
        listener()


def record_failure(actor_id: str, code: str, message: str) -> None:
    """The agent's session was lost under a Turn: ``failed`` until the rebuild, ``lastError`` until a
    Turn completes. It counts toward ``degraded`` as a failed start does."""
    session_failed(actor_id, code=code, message=message)
    update(actor_id, status="failed", nativeSessionAvailable=False)


def turn_completed(actor_id: str) -> None:
    """A completed Turn shows the agent works again: its failures and its last error are history."""
    with _lock:
        entry = _state.get(actor_id)
        failures = _failures.pop(actor_id, 0)
        if not failures and (entry is None or entry.get("lastError") is None):
            return  # the usual case: nothing to change
        degraded = entry is not None and entry.get("status") == "degraded"
    update(actor_id, lastError=None, consecutiveFailures=0, **({"status": "ready"} if degraded else {}))


def _count_failure(actor_id: str) -> int:
    with _lock:
        _failures[actor_id] = _failures.get(actor_id, 0) + 1
        return _failures[actor_id]


def session_failed(actor_id: str, *, code: str, message: str) -> int:
    """Count one more session failure in a row (a start, or a session lost under a Turn) and keep
    its error; returns the count."""
    count = _count_failure(actor_id)
    update(
        actor_id,
        consecutiveFailures=count,
        lastError={"code": code, "message": message[:ERROR_MESSAGE_CHARACTERS], "at": _now()},
    )
    return count


def session_gave_up(actor_id: str, *, code: str, retryable: bool) -> None:
    """A start ended without a session: ``degraded`` after repeated failures, else ``failed``."""
    with _lock:
        count = _failures.get(actor_id, 0)
    if code == "NATIVE_POLICY_BLOCKED":
        status = "native_policy_blocked"
    elif count >= DEGRADED_AFTER_FAILURES and retryable:
        status = "degraded"
    else:
        status = "failed"
    update(actor_id, status=status, nativeSessionAvailable=False)


def session_started(actor_id: str, **fields: Any) -> None:
    """A session is up: ``ready``, or still ``degraded`` when its sessions failed
    ``DEGRADED_AFTER_FAILURES`` times in a row since the agent last completed a Turn (a CLI that
    starts and then dies under every Turn is not well). The count and ``lastError`` end with the next
    completed Turn (``turn_completed``)."""
    with _lock:
        count = _failures.get(actor_id, 0)
    status = "degraded" if count >= DEGRADED_AFTER_FAILURES else "ready"
    update(actor_id, status=status, nativeSessionAvailable=True, consecutiveFailures=count, **fields)


def snapshot(actor_id: str) -> dict[str, Any]:
    with _lock:
        return dict(_state.get(actor_id, {"status": "stopped"}))


def all_snapshots() -> dict[str, dict[str, Any]]:
    with _lock:
        return {actor_id: dict(entry) for actor_id, entry in _state.items()}


def on_change(listener: Callable[[], None]) -> Callable[[], None]:
    """Call ``listener`` (from any thread) after each change; returns the function that stops it."""
    _change_listeners.append(listener)
    return lambda: _change_listeners.remove(listener) if listener in _change_listeners else None


def reset() -> None:
    with _lock:
        _state.clear()
        _failures.clear()

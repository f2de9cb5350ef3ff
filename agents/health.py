"""In-process agent health (FEATURES §3): what bootstrap, /api/health and the room show.

Status values: ``stopped | starting | ready | degraded | failed | native_policy_blocked``.
The runtime updates it; readers get a copy.

``degraded`` (docs/DECISIONS.md D42): the agent's session failed to start
``DEGRADED_AFTER_FAILURES`` times in a row and GroupX still tries again (its next Turn starts it
anew). ``failed``: the last failure was one no retry can fix (a command
that is not there, a refused argv) and fewer failures came before. A session that starts resets
the count, so the agent is ``ready`` again.
"""

from __future__ import annotations

import threading
from typing import Any

from django.utils import timezone

# FEATURES §3: a session start is tried 3 times; failures that use up one whole start are
# "repeated", and the next start is left to the agent's next Turn.
DEGRADED_AFTER_FAILURES = 3

_state: dict[str, dict[str, Any]] = {}
_failures: dict[str, int] = {}  # consecutive session failures per agent
_lock = threading.Lock()


def update(actor_id: str, **fields: Any) -> None:
    with _lock:
        entry = _state.setdefault(actor_id, {"status": "stopped"})
        entry.update(fields)
        entry["updatedAt"] = timezone.now().isoformat(timespec="milliseconds")


def session_failed(actor_id: str, *, code: str, message: str) -> int:
    """Count one more failed session start in a row; returns the count."""
    with _lock:
        _failures[actor_id] = _failures.get(actor_id, 0) + 1
        count = _failures[actor_id]
    update(actor_id, consecutiveFailures=count, lastError={"code": code, "message": message[:500]})
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
    """A session is up: the failure count starts again (``ready``)."""
    with _lock:
        _failures.pop(actor_id, None)
    update(actor_id, status="ready", nativeSessionAvailable=True, consecutiveFailures=0, **fields)


def snapshot(actor_id: str) -> dict[str, Any]:
    with _lock:
        return dict(_state.get(actor_id, {"status": "stopped"}))


def reset() -> None:
    with _lock:
        _state.clear()
        _failures.clear()

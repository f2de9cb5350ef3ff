"""In-process agent health (FEATURES §3): what bootstrap, /api/health and the room show.

Status values: ``stopped | starting | ready | degraded | failed | native_policy_blocked``.
The runtime updates it; readers get a copy.

``lastError`` is the agent's last failure: a start that failed, or a session lost with its Turn
(a crash, a protocol fault, a timeout that left the CLI out of step). It outlives the rebuilt
session, whose status says ``ready`` again, and is cleared by the next Turn the agent completes
(docs/DECISIONS.md D38). Every failure goes through ``record_failure``, the one place that would
count them.
"""

from __future__ import annotations

import threading
from typing import Any

from django.utils import timezone

_state: dict[str, dict[str, Any]] = {}
_lock = threading.Lock()
ERROR_MESSAGE_CHARACTERS = 500


def _now() -> str:
    return timezone.now().isoformat(timespec="milliseconds")


def update(actor_id: str, **fields: Any) -> None:
    with _lock:
        entry = _state.setdefault(actor_id, {"status": "stopped"})
        entry.update(fields)
        entry["updatedAt"] = _now()


def record_failure(actor_id: str, code: str, message: str, *, status: str = "failed") -> None:
    """The agent's session failed (to start, or under a Turn): ``status`` now, ``lastError`` until
    a Turn completes."""
    update(actor_id, status=status, nativeSessionAvailable=False,
           lastError={"code": code, "message": message[:ERROR_MESSAGE_CHARACTERS], "at": _now()})


def turn_completed(actor_id: str) -> None:
    """A completed Turn shows the agent works again: its last error is history."""
    with _lock:
        entry = _state.get(actor_id)
        if entry is None or entry.get("lastError") is None:
            return  # the usual case: nothing to change, no lock held longer
    update(actor_id, lastError=None)


def snapshot(actor_id: str) -> dict[str, Any]:
    with _lock:
        return dict(_state.get(actor_id, {"status": "stopped"}))


def reset() -> None:
    with _lock:
        _state.clear()

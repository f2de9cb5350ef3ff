"""In-process agent health (FEATURES §3): what bootstrap, /api/health and the room show.

Status values: ``stopped | starting | ready | degraded | failed | native_policy_blocked``.
The runtime updates it; readers get a copy.
"""

from __future__ import annotations

import threading
from typing import Any

from django.utils import timezone

_state: dict[str, dict[str, Any]] = {}
_lock = threading.Lock()


def update(actor_id: str, **fields: Any) -> None:
    with _lock:
        entry = _state.setdefault(actor_id, {"status": "stopped"})
        entry.update(fields)
        entry["updatedAt"] = timezone.now().isoformat(timespec="milliseconds")


def snapshot(actor_id: str) -> dict[str, Any]:
    with _lock:
        return dict(_state.get(actor_id, {"status": "stopped"}))


def reset() -> None:
    with _lock:
        _state.clear()

"""The assistant's status as ``GET /api/assistant`` shows it (FEATURES §13): ``disabled | starting |
ready | busy | failed | restart_required``, with a short ``detail`` when there is something to say.

In-process, like the agents' health (``agents/health.py``): the runtime that runs the brain sets it,
the REST views read it. It is also published beside the agents' health (under ``user:assistant``),
which the worker of split mode keeps in its lease row, so that a web process shows the worker's
brain (``assistant/brain_link.py``, docs/DECISIONS.md D55). ``restart_required`` is reported over
whatever the brain is doing once the ``assistant`` block in ``groupx.json`` differs from the one this
process started with: it is read from the file (again only when the file changed), so every process
of split mode says so, not only the one whose ``/setup`` or ``setup_save`` wrote it.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from django.conf import settings

from agents import health
from assistant.operator_binding import ASSISTANT_ACTOR_ID

STATUSES = ("disabled", "starting", "ready", "busy", "failed", "restart_required")
DETAIL_CHARACTERS = 300

_lock = threading.Lock()
_state: dict[str, Any] = {"status": "disabled", "detail": None}
_saved: tuple[tuple[int, int] | None, bool] = (None, False)  # (the file's mtime and size, its block differs)
PUBLISHED_AS = ASSISTANT_ACTOR_ID  # its key among the agents' health (never a roster agent's id)


def set_status(status: str, detail: str | None = None) -> None:
    if status not in STATUSES:
        raise ValueError(f"unknown assistant status {status!r}")
    with _lock:
        _state.update(status=status, detail=detail[:DETAIL_CHARACTERS] if detail else None)
        published = dict(_state)
    health.update(PUBLISHED_AS, **published)


def _saved_settings_differ() -> bool:
    """Whether the ``assistant`` block saved in ``groupx.json`` is not the one this process runs.
    The file is parsed again only when its mtime or size changed; a file that cannot be read or
    parsed changes nothing here (the next start says what is wrong with it)."""
    global _saved
    from setup_wizard.config import ConfigError, load_config

    path = settings.GROUPX_CONFIG_PATH
    try:
        stat = os.stat(path)
    except OSError:
        return False
    stamp = (stat.st_mtime_ns, stat.st_size)
    with _lock:
        seen, differs = _saved
    if seen == stamp:
        return differs
    try:
        differs = load_config(path).assistant != settings.GROUPX_CONFIG.assistant
    except (ConfigError, OSError, ValueError):
        differs = False
    with _lock:
        _saved = (stamp, differs)
    return differs


def snapshot() -> dict[str, Any]:
    """``{status, detail?}``: the brain's own status, unless a restart is required."""
    with _lock:
        status, detail = _state["status"], _state["detail"]
    return shown(status, detail)


def shown(status: str, detail: str | None = None) -> dict[str, Any]:
    """A brain's status (this process's, or the worker's as published) as this process shows it:
    ``restart_required`` once other settings were saved."""
    if _saved_settings_differ():
        status, detail = "restart_required", "the assistant's settings were saved; restart GroupX to apply them"
    return {"status": status if status in STATUSES else "failed", **({"detail": detail} if detail else {})}


def reset() -> None:
    global _saved
    with _lock:
        _state.update(status="disabled", detail=None)
        _saved = (None, False)

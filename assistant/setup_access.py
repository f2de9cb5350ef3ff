"""``setup_read`` and ``setup_save`` reach the setup wizard's actions, which live in the wiring
above this app: the wiring registers them here (``groupx_site/api.py``), as ``turns/wakeups.py``
lets a lower layer reach a higher one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from groupx_site.core.errors import GroupXError

_read: Callable[[], dict[str, Any]] | None = None
_save: Callable[[Any], dict[str, Any]] | None = None


def register(read: Callable[[], dict[str, Any]], save: Callable[[Any], dict[str, Any]]) -> None:
    global _read, _save
    _read, _save = read, save


def read() -> dict[str, Any]:
    if _read is None:
        raise GroupXError("SESSION_NOT_AVAILABLE", "the setup is not available in this process")
    return _read()


def save(payload: Any) -> dict[str, Any]:
    if _save is None:
        raise GroupXError("SESSION_NOT_AVAILABLE", "the setup is not available in this process")
    return _save(payload)

"""Process-wide readiness: starting → ready → closing (or failed)."""

from __future__ import annotations

_readiness = "starting"


def readiness() -> str:
    return _readiness


def set_readiness(value: str) -> None:
    global _readiness
    _readiness = value

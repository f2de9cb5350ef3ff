"""Driver lookup by the ``driver`` name of an agent's launch profile.

The names and their wire protocols come from ``groupx_site/core/driver_table.py``; each protocol has one
driver class, imported only when an agent uses it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from groupx_site.core.driver_table import DRIVERS
from groupx_site.core.errors import ErrorCode

from .base import Driver, DriverError

ADAPTER_NOT_FOUND = ErrorCode.ADAPTER_NOT_FOUND.value


def _acp(flavor: str) -> Callable[[], Driver]:
    def make() -> Driver:
        from .acp import AcpDriver

        return AcpDriver(flavor)

    return make


def _lazy(module: str, class_name: str) -> Callable[[], Driver]:
    def make() -> Driver:
        driver: Driver = getattr(importlib.import_module(module), class_name)()
        return driver

    return make


def _factory(name: str) -> Callable[[], Driver]:
    protocol = DRIVERS[name].protocol
    if protocol == "acp":
        return _acp(name)  # one ACP kernel, told its flavour
    return _lazy(f"agents.drivers.{protocol}", {"codex": "CodexDriver", "claude": "ClaudeDriver"}[protocol])


_FACTORIES: dict[str, Callable[[], Driver]] = {name: _factory(name) for name in DRIVERS}


def available_drivers() -> tuple[str, ...]:
    return tuple(sorted(_FACTORIES))


def get_driver(driver_name: str) -> Driver:
    """A fresh driver for ``driver_name``; DriverError(ADAPTER_NOT_FOUND) when there is none."""
    factory = _FACTORIES.get(driver_name)
    if factory is None:
        raise DriverError(
            ADAPTER_NOT_FOUND,
            f"no native driver named {driver_name!r} (known: {', '.join(available_drivers())})",
            retryable=False,
        )
    return factory()

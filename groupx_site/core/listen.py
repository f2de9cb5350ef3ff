"""Where this process is really listening (the agents' MCP URL needs the bound port, which differs
from groupx.json when a server is started on port 0, as the tests do)."""

from __future__ import annotations

import sys

from django.conf import settings

_bound: tuple[str, int] | None = None


def set_bound(host: str, port: int) -> None:
    global _bound
    _bound = (host, port)


def _daphne_address() -> tuple[str, int] | None:
    # daphne keeps its bound addresses on its Server object, which neither the daphne CLI nor
    # runserver exposes; but its listening port is one of the twisted reactor's readers, which the
    # reactor does expose (it has started, and listened, by the time this runs).
    if "twisted.internet.reactor" not in sys.modules:
        return None  # not under daphne: the server bound exactly what groupx.json says
    from twisted.internet import reactor, tcp

    # twisted types its reactor as a module of interface methods, which mypy cannot call.
    for reader in reactor.getReaders():  # type: ignore[misc]
        if isinstance(reader, tcp.Port):
            address = reader.getHost()
            return str(address.host), int(address.port)
    return None


def bound_address() -> tuple[str, int]:
    global _bound
    if _bound is None:
        _bound = _daphne_address() or (settings.GROUPX_CONFIG.server.host, settings.GROUPX_CONFIG.server.port)
    return _bound


def origin() -> str:
    host, port = bound_address()
    return f"http://{host}:{port}"

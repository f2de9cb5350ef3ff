"""Where this process is really listening (the agents' MCP URL needs the bound port, which differs
from groupx.json when a server is started on port 0, as the tests do)."""

from __future__ import annotations

import gc

from django.conf import settings

_bound: tuple[str, int] | None = None


def set_bound(host: str, port: int) -> None:
    global _bound
    _bound = (host, port)


def _daphne_address() -> tuple[str, int] | None:
    # daphne keeps its bound addresses on its Server object, which neither the daphne CLI nor
    # runserver exposes; the reactor has started (and listened) by the time this runs, once.
    try:
        from daphne.server import Server
    except ImportError:
        return None
    for obj in gc.get_objects():
        if isinstance(obj, Server) and obj.listening_addresses:
            host, port = obj.listening_addresses[0]
            return str(host), int(port)
    return None


def bound_address() -> tuple[str, int]:
    global _bound
    if _bound is None:
        _bound = _daphne_address() or (settings.GROUPX_CONFIG.server.host, settings.GROUPX_CONFIG.server.port)
    return _bound


def origin() -> str:
    host, port = bound_address()
    return f"http://{host}:{port}"

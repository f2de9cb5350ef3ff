"""The speed seam's mechanisms: each one's name, what it cuts, and which are on in this process.

Everything in ``groupx_site/speedups/`` copies or patches a dependency's internals (Django, daphne,
twisted, SQLite) or exists only to cut CPU or latency. Each mechanism can be switched off, so a bug
can be reproduced "with the plain framework" and an upgrade can tell which copies matter
(docs/UPGRADING.md).

The switch is ``groupx.json`` ``server.speedups``:

- ``true`` (the default): every mechanism on;
- ``false``: every one off (plain Django ``ASGIHandler``, daphne's own ``HTTPFactory`` and access
  log, twisted's own TCP writes, Django's reloader, Django's own SQLite backend, one commit per
  write call, plain ``call_soon_threadsafe``, SQLite's automatic checkpoints, no CPU pinning);
- an object ``{"<name>": bool, ...}``: the names it gives as it says, the missing ones on.

``server.threadsOnOneCpu`` (older files) is an alias of ``server.speedups.threadsOnOneCpu``; where
both say something, ``false`` wins.

The process reads the switch once from the loaded config (``settings.GROUPX_CONFIG``): :func:`active`
gives every name's state, :func:`is_on` one name's; ``GET /api/health`` reports that object as ``speedups``. This module imports no
framework at import time, so the config schema and the drivers may read the names.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType

# name -> what it cuts (one line each; docs/PERFORMANCE.md measures each one)
MECHANISMS: dict[str, str] = {
    "asgiHandler": "Django's ASGIHandler request path: fewer thread hops, signal receivers and awaits per request",
    "socketWrites": "twisted's TCP writes: a write goes straight to the socket while it has room (no epoll_ctl)",
    "accessLog": "daphne's HTTPFactory/access log: one log line written without twisted's per-request formatting",
    "reloader": "Django's autoreloader (runserver): fewer stat calls and module walks per tick",
    "threadsOnOneCpu": "the server's threads share one CPU (the GIL makes them take turns anyway); CLIs get all CPUs",
    "sqliteShortcuts": "Django's SQLite backend: cursor and adapter shortcuts on the hot queries",
    "groupCommit": "one SQLite commit for several write calls that arrive together on the writer thread",
    "handoff": "the hand-off between the loop and the writer thread without a call_soon_threadsafe per result",
    "walCheckpoints": "SQLite's automatic checkpoints: the WAL is checkpointed off the writer thread, by size",
}
NAMES: tuple[str, ...] = tuple(MECHANISMS)


class UnknownSpeedup(ValueError):
    """``server.speedups`` names a mechanism this GroupX does not have."""


def resolve(speedups: bool | Mapping[str, bool] = True, threads_on_one_cpu: bool | None = None) -> dict[str, bool]:
    """Which mechanisms are on, every name present: ``speedups`` as ``groupx.json`` gives it, and
    the older ``server.threadsOnOneCpu`` alias (``None`` when the file does not set it)."""
    if isinstance(speedups, bool):
        on = dict.fromkeys(NAMES, speedups)
    else:
        unknown = sorted(set(speedups) - set(NAMES))
        if unknown:
            raise UnknownSpeedup(f"unknown speedup {unknown[0]!r}; known: {', '.join(NAMES)}")
        on = {name: bool(speedups.get(name, True)) for name in NAMES}
    if threads_on_one_cpu is False:
        on["threadsOnOneCpu"] = False
    return on


@functools.cache
def _read_once() -> Mapping[str, bool]:
    return MappingProxyType(_from_settings())


def active() -> dict[str, bool]:
    """The mechanisms on in this process: read once from the loaded ``groupx.json`` (every one on
    without Django settings, e.g. a driver's unit test); the hot paths ask for it per call."""
    return dict(_read_once())


def forget() -> None:
    """Read the switch again on the next call (a test that changes the settings)."""
    _read_once.cache_clear()


def _from_settings() -> dict[str, bool]:
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    try:
        server = settings.GROUPX_CONFIG.server
    except (ImproperlyConfigured, AttributeError):  # no GroupX settings here: the defaults
        return resolve(True)
    return resolve(server.speedups, server.threadsOnOneCpu)


def is_on(name: str) -> bool:
    try:
        return _read_once()[name]
    except KeyError:
        raise UnknownSpeedup(name) from None

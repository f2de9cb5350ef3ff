"""GroupX's ASGI application (``groupx_site.asgi``) with two bench-only paths around it, for
``python -m bench.post_cost --cprofile``: ``POST /__bench/cprofile/start`` switches cProfile on in the
server's main thread (the reactor's and the event loop's: the whole HTTP path of a request) and
``POST /__bench/cprofile/stop`` switches it off and writes its stats to ``GROUPX_BENCH_CPROFILE``.
Every other request goes to GroupX unchanged (or to ``GROUPX_BENCH_PROFILED_APP``, ``module:name``,
e.g. ``bench.floor_django:application``, the floor's endpoint, to compare). Call counts do not move
with the shared machine's load.
"""

from __future__ import annotations

import cProfile
import importlib
import os

_module, _, _name = os.environ.get("GROUPX_BENCH_PROFILED_APP", "groupx_site.asgi:application").partition(":")
groupx = getattr(importlib.import_module(_module), _name)

PREFIX = "/__bench/cprofile/"
_profile: cProfile.Profile | None = None


async def application(scope, receive, send):
    global _profile
    if scope["type"] != "http" or not scope["path"].startswith(PREFIX):
        return await groupx(scope, receive, send)
    if scope["path"].endswith("/start"):
        _profile = cProfile.Profile()
        _profile.enable()
    elif _profile is not None:
        _profile.disable()
        _profile.dump_stats(os.environ["GROUPX_BENCH_CPROFILE"])
        _profile = None
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})

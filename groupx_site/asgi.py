"""The ASGI entry point: a Channels ``ProtocolTypeRouter`` in front of Django (docs/ARCHITECTURE.md
"One process, four surfaces"; docs/DECISIONS.md D43).

- ``http``, through a ``URLRouter``: ``/api/events`` to the event-stream consumer
  (``rooms/consumers.py``), whose ``send`` waits while the client is not reading
  (``groupx_site/backpressure.py``); ``/mcp`` to the member MCP server (``agents.mcp.server``);
  ``/mcp/operator`` to the room assistant's operator server (``assistant.mcp.server``); any other
  ``/mcp/…`` answers 503 ``MCP_UNAVAILABLE``; everything else to Django (API, room page, admin, static files);
- ``lifespan`` (uvicorn; daphne sends none);
- ``channel``, through a ``ChannelNameRouter``: ``groupx-agents`` to the agent runtime's consumer
  (``agents/channel_consumer.py``), served in this process by default, or by ``manage.py runworker
  groupx-agents`` in split mode.

Daphne sends no ASGI lifespan, so the runtime is started from the reactor once the port is bound,
or lazily by the first request; ``ensure_started`` is idempotent.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "groupx_site.settings")

from groupx_site.speedups import switches as speedups_switches  # noqa: E402

SPEEDUPS = speedups_switches.active()  # which of the speed seam's mechanisms this process installs
if SPEEDUPS["asgiHandler"]:
    from groupx_site.speedups.handler import get_application
else:  # Django's own ASGIHandler
    from django.core.asgi import get_asgi_application as get_application

django_app = get_application()
from groupx_site import static_files  # noqa: E402  (after Django is set up)

static_files.ensure_built()  # fingerprinted static files (D120): at most once per content of static/
django_app = static_files.FingerprintedStaticHandler(django_app)  # wraps only Django: lifespan has no path

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import path, re_path  # noqa: E402

from agents import channel_consumer  # noqa: E402  (after Django is set up)
from groupx_site import backpressure, body_limit, process_runtime, shutdown  # noqa: E402
from rooms.consumers import EventStreamConsumer  # noqa: E402


async def send_json(send, status: int, body: dict) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": payload})


async def mcp_unavailable(scope, receive, send) -> None:
    await send_json(
        send,
        503,
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32603,
                "message": "the GroupX MCP tools are not available",
                "data": {"code": "MCP_UNAVAILABLE"},
            },
        },
    )


async def lifespan(scope, receive, send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            # Not started here: uvicorn runs lifespan startup *before* it binds, and restart
            # recovery must not run in a process that may lose the port (groupx_site/process_runtime.py).
            # The first request, which proves the bind, starts it.
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await process_runtime.shutdown()
            await send({"type": "lifespan.shutdown.complete"})
            return


def imported_on_first_request(module_name: str):
    """The ASGI app ``module_name.handle``, imported when the first request for it comes.

    The MCP SDK behind ``/mcp`` and ``/mcp/operator`` is ~20 MiB of resident memory and ~0.3 s of
    import, and most servers never receive an MCP call (a session is marked MCP-verified without
    one): imported at start it was the largest part of the peak RSS above the 0.5x target
    (docs/DECISIONS.md D56). The import runs on a thread so the loop keeps serving meanwhile;
    Python's import lock makes concurrent first requests wait for the one import."""
    loaded = None

    async def handle(scope, receive, send):
        nonlocal loaded
        if loaded is None:
            loaded = (await asyncio.to_thread(importlib.import_module, module_name)).handle
        return await loaded(scope, receive, send)

    return handle


def with_backpressure(app):
    async def paced(scope, receive, send):
        # a slow reader pauses its stream instead of filling memory (D21)
        return await app(scope, receive, backpressure.with_backpressure(send))

    return paced


EVENTS_PATH = "/api/events"

http_routes = URLRouter(
    [
        path(
            EVENTS_PATH.lstrip("/"),
            with_backpressure(EventStreamConsumer.as_asgi(django_app=django_app, end_on_drain=shutdown.end_on_drain)),
        ),
        re_path(r"^mcp/?$", imported_on_first_request("agents.mcp.server")),
        re_path(
            r"^mcp/operator/?$", imported_on_first_request("assistant.mcp.server")
        ),  # the room assistant's tools (FEATURES §13)
        re_path(r"^mcp/", mcp_unavailable),
        re_path(r"", django_app),
    ]
)


async def http(scope, receive, send):
    if scope["path"] == "/api/health":
        # Health answers while the runtime starts (migrations included), so a racing `groupx start`
        # recognises this instance within its 500 ms probe instead of calling it a conflict.
        process_runtime.begin_start()
    else:
        await process_runtime.wait_for_store()
    if scope["path"].startswith("/api/") and scope["path"] != EVENTS_PATH:
        # Where the routes below send it, without matching it against five patterns first (~15 µs
        # of each API request, D66): no other route starts with /api/.
        return await django_app(scope, receive, send)
    return await http_routes(scope, receive, send)


application = ProtocolTypeRouter(
    {
        "http": http,
        "lifespan": lifespan,
        "channel": channel_consumer.channel_router,
    }
)


def _start_with_the_reactor() -> None:
    """Under daphne (and ``manage.py runserver``) start the runtime as soon as the reactor runs."""
    if "daphne.server" not in sys.modules:
        return
    from twisted.internet import defer, reactor

    body_limit.install()  # before the first connection: bodies over 2 MiB are refused unread
    # Only the speedups that are on patch anything (groupx_site/speedups/switches.py).
    if SPEEDUPS["accessLog"]:
        from groupx_site.speedups import access_log

        access_log.install()  # before daphne's server runs: no access-log line twisted would drop (D70)
    if SPEEDUPS["socketWrites"]:
        from groupx_site.speedups import socket_writes

        socket_writes.install()  # before the first connection: no epoll_ctl while the socket has room (D73)

    reactor.callWhenRunning(process_runtime.schedule_start)
    # daphne has no lifespan: close sessions and child processes before the reactor stops.
    reactor.addSystemEventTrigger(
        "before", "shutdown", lambda: defer.Deferred.fromFuture(asyncio.ensure_future(process_runtime.shutdown()))
    )


_start_with_the_reactor()

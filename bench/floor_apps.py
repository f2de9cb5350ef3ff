"""The servers of ``python -m bench.floor``'s HTTP part (``bench/floor_http.py``), as ASGI apps.

Under daphne, daphne's request class is GroupX's (``groupx_site.body_limit``), and its TCP connections write as
GroupX's do (``groupx_site.speedups.socket_writes``).

- ``bare``: a plain ASGI callable that reads the request body, parses its JSON and answers 201 with
  a small JSON body: what daphne or uvicorn cost per request with no framework at all; a GET is
  answered with an event stream of ``n`` frames (``bench/floor_sse.py``).
- ``bench.floor_django:application`` (its own module: it sets Django up) is the same answer through
  GroupX's Django and a django-ninja endpoint.
"""

from __future__ import annotations

import asyncio
import json
import sys
from urllib.parse import parse_qs

if "daphne.server" in sys.modules:
    from groupx_site import body_limit
    from groupx_site.speedups import access_log, socket_writes

    # daphne as GroupX runs it (groupx_site/asgi.py): its request class with the 2 MiB ceiling and
    # twisted's form parsing off (D60), which bare daphne would spend ~20 % of a request on, and
    # no access-log line for twisted's log, which daphne sends nowhere (D70), and writes that need
    # no epoll_ctl while the socket has room (D73).
    body_limit.install()
    access_log.install()
    socket_writes.install()

# The same answer from every floor server (bench/floor_node_server.js too).
ANSWER = b'{"messageEventId":"evt_floor","turns":[]}'
HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(ANSWER)).encode())]
# One SSE frame of the size of a Turn's event envelope (bench/floor_node_server.js sends the same).
FRAME = (
    b'id: 1234\nevent: turn.content.delta\ndata: {"type":"turn.content.delta","body":{"text":"'
    + b"x" * 300
    + b'"}}\n\n'
)


async def bare(scope, receive, send) -> None:
    if scope["type"] != "http":  # uvicorn runs with --lifespan off; nothing else is served
        return
    if scope["method"] == "GET":
        await stream(scope, send)
        return
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    json.loads(body)
    await send({"type": "http.response.start", "status": 201, "headers": HEADERS})
    await send({"type": "http.response.body", "body": ANSWER})


async def stream(scope, send) -> None:
    """``GET /?n=N``: an event stream of N frames, one per turn of the event loop (as events that
    arrive one at a time leave), then the end of the body."""
    count = int(parse_qs(scope["query_string"].decode()).get("n", ["1"])[0])
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    for _ in range(count):
        await send({"type": "http.response.body", "body": FRAME, "more_body": True})
        await asyncio.sleep(0)
    await send({"type": "http.response.body", "body": b""})

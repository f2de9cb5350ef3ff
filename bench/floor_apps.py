"""The servers of ``python -m bench.floor``'s HTTP part (``bench/floor_http.py``), as ASGI apps.

- ``bare``: a plain ASGI callable that reads the request body, parses its JSON and answers 201 with
  a small JSON body: what daphne or uvicorn cost per request with no framework at all.
- ``bench.floor_django:application`` (its own module: it sets Django up) is the same answer through
  GroupX's Django and a django-ninja endpoint.
"""

from __future__ import annotations

import json

# The same answer from every floor server (bench/floor_node_server.js too).
ANSWER = b'{"messageEventId":"evt_floor","turns":[]}'
HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(ANSWER)).encode())]


async def bare(scope, receive, send) -> None:
    if scope["type"] != "http":  # uvicorn runs with --lifespan off; nothing else is served
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

"""``GET /api/events`` as a Channels consumer (the ``http`` routes of ``groupx_site/asgi.py``).

The stream itself is ``rooms/sse.py`` (cursor rules, the loop's shared tail, heartbeats, every seq
once and in order); this consumer only serves it. A request that is anything but a clean stream
request (another method, a foreign ``Host`` or ``Origin``, a cursor that is not a plain decimal,
another query parameter, a runtime that drains) is handed whole to Django, whose documented
``/api/events`` route (``rooms/api.py``) answers it with the protocol's error exactly as before:
one set of refusal rules, not two.

The consumer listens to the client while it streams: a disconnect ends the stream at once (the
tail forgets it), as Django's handler did. It joins no channel of its own: a stream hears the
commits through its process's shared tail (``rooms/tail.py``), which the bus feeds, from this
process or, through the channel layer's relay, from the others (``rooms/bus.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import parse_qsl

from channels.consumer import get_handler_name
from channels.exceptions import StopConsumer
from channels.generic.http import AsyncHttpConsumer
from channels.utils import await_many_dispatch

from groupx_site.core import process_state
from groupx_site.core.errors import GroupXError
from groupx_site.core.http import is_own_host, refused_origin, replayed
from rooms import sse

# What the Django route and the API's middleware set on a stream (groupx_site/middleware.py).
STREAM_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
    (b"content-security-policy", b"default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]
PLAIN_CURSOR = re.compile(r"[0-9]{1,18}")


class EventStreamConsumer(AsyncHttpConsumer):
    def __init__(
        self, *, django_app: Callable[..., Any], end_on_drain: Callable[[AsyncIterator[Any]], AsyncIterator[Any]]
    ):
        """``as_asgi(django_app=..., end_on_drain=...)``: the Django application, which answers
        everything that is not a stream, and the wrapper that ends a stream when the runtime
        drains (groupx_site/shutdown.py)."""
        super().__init__()
        self.django_app = django_app
        self.end_on_drain = end_on_drain

    async def __call__(self, scope, receive, send):
        # AsyncConsumer's own __call__ would open a channel on the layer for every stream; a
        # stream needs none (see the module docstring). The client's receive is kept: the
        # stream listens for the disconnect itself while ``handle`` runs.
        self.scope, self.base_send, self.channel_layer, self._client = scope, send, None, receive
        with contextlib.suppress(StopConsumer):
            await await_many_dispatch([receive], self.dispatch)

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Without Channels' close of the thread's old database connections before each message:
        # the stream's reads run on the database threads (groupx_site/store/db.py).
        await getattr(self, get_handler_name(message))(message)

    async def handle(self, body: bytes) -> None:
        cursor = self._stream_cursor()
        if cursor is None:
            await self.django_app(self.scope, replayed(body, self._client), self.base_send)
            return
        await self.send_headers(status=200, headers=STREAM_HEADERS)
        streaming = asyncio.ensure_future(self._stream(cursor))
        gone = asyncio.ensure_future(self._until_disconnect())
        try:
            await asyncio.wait({streaming, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (streaming, gone):
                task.cancel()
            await asyncio.gather(streaming, gone, return_exceptions=True)
        if streaming.done() and not streaming.cancelled():
            if streaming.exception() is not None:
                raise streaming.exception()  # daphne logs it and closes the connection
            await self.send_body(b"")  # the stream ended (the runtime drains): the response ends

    async def _stream(self, cursor: int) -> None:
        async for chunk in self.end_on_drain(sse.event_stream(cursor)):
            await self.send_body(chunk.encode() if isinstance(chunk, str) else chunk, more_body=True)

    async def _until_disconnect(self) -> None:
        while (await self._client())["type"] != "http.disconnect":
            pass

    def _stream_cursor(self) -> int | None:
        """The cursor of a clean stream request; None when Django must answer it."""
        if self.scope["method"] != "GET" or process_state.readiness() == "closing":
            return None
        headers = dict(self.scope["headers"])
        host = headers.get(b"host", b"").decode("latin-1")
        if not host or not is_own_host(host):
            return None
        origin = headers.get(b"origin")
        if origin is not None and refused_origin(origin.decode("latin-1"), host) is not None:
            return None
        query = parse_qsl(self.scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        if any(name != "afterSeq" for name, _ in query) or len(query) > 1:
            return None
        after_seq = query[0][1] if query else None
        if after_seq is not None and not PLAIN_CURSOR.fullmatch(after_seq):
            return None
        last_event_id = headers.get(b"last-event-id")
        try:
            return sse.parse_cursor(after_seq, last_event_id.decode("latin-1") if last_event_id is not None else None)
        except GroupXError:
            return None

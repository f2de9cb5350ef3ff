"""Write backpressure for the event stream under daphne (docs/DECISIONS.md D21).

daphne's ASGI ``send`` returns as soon as twisted has *buffered* the bytes, so a client that reads
slowly (a stuck tab, a laptop asleep, 50 readers on one busy core) made the server keep in memory
everything it had not read yet: one non-reading client of a 100,000-event replay grew the server
by 53 MiB, and ``make bench``'s 50 readers added ~55 MiB at 90 turns/s.

``with_backpressure(send)`` gives the daphne request a twisted push producer, which the transport
pauses when its buffer passes 64 KiB and resumes once it has drained; a body ``send`` waits while
paused. The event stream then simply stops pulling: durable events stay in the table, and the
stream catches up from its cursor when the client reads again, in pages, exactly once and in
order (``rooms/tail.py``); transients queued meanwhile are merged or dropped by the stream's inbox
(PROTOCOL §11). A slow client costs the server two Django chunks (≤ 128 KiB), not all it missed.

Under another ASGI server ``send`` is returned unchanged: uvicorn applies flow control itself.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any

Send = Callable[[dict[str, Any]], Awaitable[None]]


class _Writable:
    """A twisted push producer (``IPushProducer``): the transport pauses and resumes it."""

    def __init__(self, *, paused: bool):
        self.ready = asyncio.Event()
        self.gone = False
        if not paused:
            self.ready.set()

    def pauseProducing(self) -> None:  # noqa: N802 (twisted's interface)
        self.ready.clear()

    def resumeProducing(self) -> None:  # noqa: N802
        self.ready.set()

    def stopProducing(self) -> None:  # noqa: N802 (the connection is gone)
        self.gone = True
        self.ready.set()


def daphne_request(send: Send) -> Any | None:
    """The twisted request behind a daphne ``send`` (``functools.partial(Server.handle_reply,
    protocol)``), or None under any other server."""
    if isinstance(send, functools.partial) and send.args and hasattr(send.args[0], "registerProducer"):
        return send.args[0]
    return None


def with_backpressure(send: Send) -> Send:
    request = daphne_request(send)
    if request is None:
        return send
    writable: _Writable | None = None

    async def paced_send(message: dict[str, Any]) -> None:
        nonlocal writable
        if message["type"] == "http.response.body":
            if writable is None:
                # A transport already full when the body starts has paused the channel already.
                writable = _Writable(paused=bool(getattr(request.channel, "_waitingForTransport", False)))
                request.registerProducer(writable, True)
            await writable.ready.wait()
            if writable.gone:
                return  # the client left; Django's disconnect listener ends the response
            if not message.get("more_body", False):
                request.unregisterProducer()
        await send(message)

    return paced_send

"""twisted's socket writes without two ``epoll_ctl`` calls each (D73).

twisted buffers every ``transport.write`` and asks the reactor to watch the socket for
writability (``startWriting``: the asyncio reactor's ``addWriter``, ``loop.add_writer``, an
``epoll_ctl`` MOD); a later loop iteration's ``doWrite`` sends the buffer and, the buffer empty,
stops watching (``stopWriting``: ``remove_writer``, another ``epoll_ctl``). A connected socket
whose kernel buffer has room is writable at once, so for an HTTP answer or an SSE frame the two
system calls, the selector's bookkeeping and a wake-up by epoll are spent to learn what was
already true: ~2 of the ~7 ``epoll_ctl`` of a throughput Turn per answer or frame.

``install`` makes twisted's TCP server connections start writing by scheduling their ``doWrite``
with ``loop.call_soon`` instead: it runs after the current callback, so the status line, headers,
body and chunk terminator one response writes in one callback still go out in one ``send``, as
they did. ``doWrite`` is run exactly as the reactor runs it when epoll reports the socket writable
(``_readOrWrite``: a failed send or a finished ``loseConnection`` disconnects the connection). When
the kernel took less than everything (a slow reader: the back-pressure of ``groupx_site/backpressure.py``, D21),
the connection falls back to twisted's own path and stays there until its buffer is empty: the
reactor watches the socket and ``doWrite`` pauses and resumes producers as before.

This relies on twisted internals (``startWriting``/``stopWriting`` being how a descriptor asks for
``doWrite``, ``doWrite``'s buffer attributes, the asyncio reactor's ``_readOrWrite`` and
``_asyncioEventloop``): ``tests/unit/test_socket_writes.py`` fails when that code changes.
"""

from __future__ import annotations

import asyncio


def install() -> None:
    """Make twisted's TCP ports build ``SoonWritingServer`` connections (idempotent; before the
    first connection; only under the asyncio reactor, the one daphne installs)."""
    from twisted.internet import asyncioreactor, reactor, tcp
    from twisted.python.log import callWithLogger

    if getattr(tcp.Port.transport, "writes_soon", False) or not isinstance(
        reactor, asyncioreactor.AsyncioSelectorReactor
    ):
        return

    class SoonWritingServer(tcp.Server):
        writes_soon = True
        _soon: asyncio.Handle | None = None  # the doWrite queued with call_soon
        _watched = False  # twisted's path: the reactor watches the socket for writability

        def startWriting(self) -> None:  # noqa: N802 (twisted's name)
            if self._watched or self._soon is not None:
                return
            self._soon = self.reactor._asyncioEventloop.call_soon(self._write_soon)

        def stopWriting(self) -> None:  # noqa: N802 (an abort or a lost connection: no doWrite, as in twisted)
            if self._soon is not None:
                self._soon.cancel()
                self._soon = None
            self._watched = False
            super().stopWriting()

        def _write_soon(self) -> None:
            self._soon = None
            if not self.connected or self._watched:
                return  # lost meanwhile, or a doWrite's producer wrote more that epoll now waits for
            callWithLogger(self, self.reactor._readOrWrite, self, False)
            if self.connected and (self.offset < len(self.dataBuffer) or self._tempDataLen):
                self._watched = True  # the kernel's buffer is full: wait for epoll, as twisted does
                super().startWriting()

    tcp.Port.transport = SoonWritingServer

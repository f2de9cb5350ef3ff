"""Many event-stream readers on one event loop, over plain sockets (the fault tier, D37).

``tests/sse.py`` gives each reader a thread and httpx; two hundred of those would spend the test
machine's two cores parsing in the client. Here each reader is a coroutine on its own socket
speaking HTTP/1.1 as a browser does (chunked body), and keeps only the ``id:`` of each durable
frame: what "every seq exactly once and in order" needs. A reader can be made slow the two ways a
real one is: a small receive buffer read in small pieces, or reads paused until a condition.
"""

from __future__ import annotations

import asyncio
import re
import socket

DURABLE_ID = re.compile(rb"^id: (\d+)$", re.MULTILINE)


class Dechunker:
    """Undoes HTTP/1.1 chunked transfer coding incrementally: bytes in, body bytes out."""

    def __init__(self) -> None:
        self._buffer = b""
        self._left = 0  # bytes of the current chunk still to come, then its CRLF

    def feed(self, data: bytes) -> bytes:
        self._buffer += data
        body = bytearray()
        while True:
            if self._left:
                taken = self._buffer[: self._left]
                body += taken
                self._buffer = self._buffer[len(taken) :]
                self._left -= len(taken)
                if self._left:
                    return bytes(body)
            size_end = self._buffer.find(b"\r\n", 2 if self._buffer.startswith(b"\r\n") else 0)
            if size_end < 0:
                return bytes(body)
            size_line = self._buffer[:size_end].strip(b"\r\n").split(b";")[0]
            self._buffer = self._buffer[size_end + 2 :]
            self._left = int(size_line, 16)
            if self._left == 0:
                return bytes(body)


class StreamReader:
    """One ``GET /api/events?afterSeq=…`` reader that records the durable seqs it gets."""

    def __init__(
        self,
        port: int,
        after_seq: int,
        *,
        receive_buffer: int | None = None,
        piece: int = 65536,
        hold: asyncio.Event | None = None,
    ):
        self.port, self.after_seq = port, after_seq
        self.receive_buffer, self.piece, self.hold = receive_buffer, piece, hold
        self.seqs: list[int] = []
        self.status: int | None = None
        self.headers_read = asyncio.Event()
        self._progress = asyncio.Condition()
        self._text = b""

    async def run(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if self.receive_buffer:  # set before connecting, so the window offered is small from the start
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.receive_buffer)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", self.port))
        reader, writer = await asyncio.open_connection(sock=sock, limit=self.piece)
        try:
            writer.write(
                f"GET /api/events?afterSeq={self.after_seq} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
                "Accept: text/event-stream\r\n\r\n".encode()
            )
            head = await reader.readuntil(b"\r\n\r\n")
            self.status = int(head.split(b" ", 2)[1])
            self.headers_read.set()
            if self.hold is not None:
                await self.hold.wait()
            dechunker = Dechunker()
            while data := await reader.read(self.piece):
                self._take(dechunker.feed(data))
                async with self._progress:
                    self._progress.notify_all()
        finally:
            writer.close()

    def _take(self, body: bytes) -> None:
        text = self._text + body
        end = text.rfind(b"\n\n")  # whole frames only; a frame cut by a read waits for the rest
        cut = end + 2 if end >= 0 else 0
        self.seqs += [int(seq) for seq in DURABLE_ID.findall(text, 0, cut)]
        self._text = text[cut:]

    async def reached(self, seq: int) -> None:
        async with self._progress:
            await self._progress.wait_for(lambda: bool(self.seqs) and self.seqs[-1] >= seq)

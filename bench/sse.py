"""A lean SSE reader for the benchmarks.

It splits the raw byte stream into frames and parses only the ``id:`` and ``data:`` lines; the
JSON is decoded only by callers that need it, so 50 readers in one process cost the client side
little and the figures stay about the server.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx


@dataclass(slots=True)
class Frame:
    seq: int | None  # None for transient frames, comments and the stream.reset signal
    data: bytes | None
    at: float  # time.perf_counter() when the chunk holding the frame arrived


def parse(block: bytes, at: float) -> Frame:
    seq, data = None, None
    for line in block.split(b"\n"):
        if line.startswith(b"id: "):
            seq = int(line[4:])
        elif line.startswith(b"data: "):
            data = line[6:]
    return Frame(seq, data, at)


async def frames(client: httpx.AsyncClient, base_url: str, *, after_seq: int) -> AsyncIterator[Frame]:
    """Every frame of one connection, from ``afterSeq``; ends when the server closes the stream."""
    async with client.stream("GET", f"{base_url}/api/events", params={"afterSeq": str(after_seq)}) as response:
        response.raise_for_status()
        buffer = b""
        async for chunk in response.aiter_raw():
            at = time.perf_counter()
            buffer += chunk
            *blocks, buffer = buffer.split(b"\n\n")
            for block in blocks:
                yield parse(block, at)


def stream_client(connections: int = 4) -> httpx.AsyncClient:
    # read=None: a quiet stream between heartbeats is not an error; every caller has its own deadline
    return httpx.AsyncClient(
        timeout=httpx.Timeout(10, read=None),
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
    )

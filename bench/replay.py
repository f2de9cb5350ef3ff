"""Replay: one client reads the whole existing log from seq 0.

The clock runs from the request to the frame holding the last seq. If the server closed the
stream before that, the client reopens it from the last seq it saw, as a browser does with
Last-Event-ID, and the reconnect is counted (the target is zero).
"""

from __future__ import annotations

import contextlib
import statistics
import time

import httpx

from bench import sse

MAX_RECONNECTS = 10


async def read_all(base_url: str, head: int) -> dict:
    received, last, reconnects = 0, 0, 0
    started = time.perf_counter()
    async with sse.stream_client(1) as client:
        while True:
            first_byte = None
            with contextlib.suppress(httpx.HTTPError):  # a broken stream counts as a reconnect
                async for frame in sse.frames(client, base_url, after_seq=last):
                    first_byte = first_byte or frame.at
                    if frame.seq is not None:
                        received, last = received + 1, frame.seq
                        if last >= head:
                            return {
                                "seconds": round(frame.at - started, 3),
                                "events": received,
                                "reconnects": reconnects,
                                "firstByteMs": round((first_byte - started) * 1000, 1),
                            }
            if reconnects >= MAX_RECONNECTS:
                raise RuntimeError(f"replay stopped at seq {last} of {head} after {reconnects} reconnects")
            reconnects += 1


async def run(base_url: str, head: int, *, repeats: int = 3) -> dict:
    runs = [await read_all(base_url, head) for _ in range(repeats)]
    return {
        "headSeq": head,
        "events": runs[0]["events"],
        "runs": runs,
        "medianSeconds": round(statistics.median(r["seconds"] for r in runs), 3),
        "maxReconnects": max(r["reconnects"] for r in runs),
    }

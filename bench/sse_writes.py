"""Entry point: ``python -m bench.sse_writes``: how a sequential Turn's event-stream frames leave the
server, write by write (docs/PERFORMANCE.md "Round 7", D65).

Starts GroupX as ``bench.profile_turn`` does (``groupx start``, three instant fake ACP agents), opens
one raw ``GET /api/events`` and posts ``--turns`` messages to one agent one after the other, each
once the previous Turn's ``turn.completed`` has arrived. daphne sends the stream with chunked
transfer encoding, one chunk per body ``send``, so the chunks are the stream's writes. Printed: the
frames and the writes per Turn and the commonest ways a Turn's frames were split into writes.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

import httpx

from bench.compare_servers import Server

EVENT_TYPE = re.compile(rb'"type":"([a-z]+\.[a-z._]+)"')


async def _run(server: Server, turns: int) -> tuple[list[list[str]], Counter]:
    host, port = "127.0.0.1", int(server.base_url.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection(host, port)
    writes: list[list[str]] = []
    arrived = asyncio.Event()

    async def read_chunks() -> None:
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip(), 16)
            data = await reader.readexactly(size + 2)
            writes.append([kind.decode() for kind in EVENT_TYPE.findall(data)] or ["(comment)"])
            arrived.set()

    shapes: Counter = Counter()
    async with httpx.AsyncClient(base_url=server.base_url, headers={"Origin": server.base_url}) as http:
        cursor = (await http.get("/api/bootstrap")).json().get("cursor") or 0
        writer.write(
            f"GET /api/events?afterSeq={cursor} HTTP/1.1\r\nHost: {host}:{port}\r\n"
            "Accept: text/event-stream\r\n\r\n".encode()
        )
        await writer.drain()
        await reader.readuntil(b"\r\n\r\n")
        task = asyncio.create_task(read_chunks())
        try:
            for turn in range(turns + 1):
                first = len(writes)
                response = await http.post(
                    "/api/messages",
                    json={"content": f"message {turn}", "to": ["agent:kimi"], "clientCommandId": f"sse-writes-{turn}"},
                )
                response.raise_for_status()
                while not any("turn.completed" in kinds for kinds in writes[first:]):
                    arrived.clear()
                    await asyncio.wait_for(arrived.wait(), 30)
                if turn == 0:
                    writes.clear()  # the first Turn warms the agent's session up
                    continue
                shapes[" | ".join(" + ".join(kinds) for kinds in writes[first:])] += 1
        finally:
            task.cancel()
            writer.close()
    return writes, shapes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sse_writes", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=60)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="groupx-sse-writes-") as scratch:
        server = Server("start", Path(scratch)).start()
        try:
            writes, shapes = asyncio.run(_run(server, args.turns))
        finally:
            server.stop()
    frames = sum(len(kinds) for kinds in writes)
    print(
        f"{args.turns} sequential Turns, one stream: {frames / args.turns:.2f} frames and "
        f"{len(writes) / args.turns:.2f} writes per Turn"
    )
    for shape, count in shapes.most_common(4):
        print(f"  {count} Turns: {shape}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

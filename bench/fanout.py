"""Fan-out: many SSE clients from seq 0 while the throughput workload runs.

The clients live in a child process (multiprocessing, spawn) so their frame parsing does not steal
the sender's event loop; they still share the machine's two cores with the server, as a browser
tab would. Each client keeps only the seqs it received. At the end the parent sends the
authoritative seq list read from SQLite; each client must have got every one exactly once and in
order. A stream that ends early is reopened from the last seq it got (counted as a reconnect).
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import time

import httpx

from bench import sse

MAX_RECONNECTS = 5  # per client


async def _client(base_url: str, got: list[int], state: dict, ready: asyncio.Event) -> None:
    async with sse.stream_client(1) as client:
        for _ in range(MAX_RECONNECTS + 1):
            with contextlib.suppress(httpx.HTTPError):  # a broken stream is a reconnect, not a crash
                async for frame in sse.frames(client, base_url, after_seq=got[-1] if got else 0):
                    ready.set()
                    if frame.seq is not None:
                        got.append(frame.seq)
                        if frame.seq >= state["until"]:
                            state["done_at"] = time.perf_counter()
                            return
            state["reconnects"] += 1


def _verify(expected: list[int], got: list[int]) -> dict:
    wanted, seen = set(expected), set(got)
    return {
        "received": len(got),
        "missing": len(wanted - seen),
        "duplicates": len(got) - len(seen),
        "outOfOrder": sum(1 for a, b in zip(got, got[1:], strict=False) if b <= a),
        "unexpected": len(seen - wanted),
    }


async def _main(base_url: str, clients: int, conn) -> None:
    states = [{"until": float("inf"), "reconnects": 0, "done_at": None} for _ in range(clients)]
    got: list[list[int]] = [[] for _ in range(clients)]
    readies = [asyncio.Event() for _ in range(clients)]
    tasks = [asyncio.create_task(_client(base_url, got[i], states[i], readies[i])) for i in range(clients)]
    await asyncio.wait_for(asyncio.gather(*(r.wait() for r in readies)), 30)
    conn.send("ready")
    expected: list[int] = await asyncio.get_running_loop().run_in_executor(None, conn.recv)
    told, until = time.perf_counter(), expected[-1]
    for state, seqs, task in zip(states, got, tasks, strict=True):
        state["until"] = until
        if seqs and seqs[-1] >= until:  # already caught up: no further frame would wake it
            state["done_at"] = told
            task.cancel()
    _, pending = await asyncio.wait(tasks, timeout=60)
    for task in pending:
        task.cancel()
    results = [_verify(expected, [s for s in g if s <= until]) for g in got]
    conn.send(
        {
            "clients": clients,
            "expectedEvents": len(expected),
            "clientsComplete": sum(1 for g in got if g and g[-1] >= until),
            "missing": sum(r["missing"] for r in results),
            "duplicates": sum(r["duplicates"] for r in results),
            "outOfOrder": sum(r["outOfOrder"] for r in results),
            "unexpected": sum(r["unexpected"] for r in results),
            "reconnects": sum(s["reconnects"] for s in states),
            "framesDelivered": sum(r["received"] for r in results),
            # how long the slowest client still needed once the throughput run was over
            "secondsToCatchUp": round(max((s["done_at"] or told) for s in states) - told, 3),
        }
    )


def _child(base_url: str, clients: int, conn) -> None:
    asyncio.run(_main(base_url, clients, conn))


class FanOut:
    """Parent side: ``start()`` returns once every client is connected; ``finish(seqs)`` verifies."""

    def __init__(self, base_url: str, clients: int = 50):
        ctx = multiprocessing.get_context("spawn")
        self._conn, child_conn = ctx.Pipe()
        self._proc = ctx.Process(target=_child, args=(base_url, clients, child_conn), daemon=True)

    def start(self) -> None:
        self._proc.start()
        if not self._conn.poll(60) or self._conn.recv() != "ready":
            raise RuntimeError("the fan-out clients did not connect")

    def finish(self, expected: list[int]) -> dict:
        self._conn.send(expected)
        result = self._conn.recv() if self._conn.poll(120) else {"error": "no result from the fan-out clients"}
        self._proc.join(10)
        if self._proc.is_alive():
            self._proc.terminate()
        return result

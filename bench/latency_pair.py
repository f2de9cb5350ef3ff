"""Entry point: ``python -m bench.latency_pair BASE OTHER``: the kit's latency workload against two
checkouts of GroupX at once, one Turn on each in turn (docs/PERFORMANCE.md "Round 9").

On a machine shared with other work, a figure of one run moves by more than a change worth
0.3 ms; two servers measured in alternated runs meet different loads. Here both servers
(``groupx start`` from each directory, each with the side-by-side run's three instant fake ACP
agents, ``bench/compare_servers.py``) run side by side, and the client sends one message to
``agent:kimi`` of one, waits for its ``turn.completed``, then one to the other's, the order of each
pair alternating: both sides meet the same moments of load. It prints, per side, the median and
p25-p75 of POST → 202, POST → first content delta and POST → reply (``message.created`` read from
SSE), as the kit measures them, and the median of the per-pair differences.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from bench import compare_servers, sse

FIGURES = (("POST -> 202", "accepted"), ("POST -> first delta", "delta"), ("POST -> reply", "reply"))


class Side:
    def __init__(self, name: str, base_url: str):
        self.name, self.base_url = name, base_url
        self.client = httpx.AsyncClient(base_url=base_url, timeout=10, trust_env=False)
        self.seen: dict[str, dict[str, float]] = {}
        self.waiting: dict[str, asyncio.Future] = {}
        self.figures: list[dict[str, float]] = []
        self._stream = sse.stream_client(1)
        self._task: asyncio.Task | None = None

    async def open(self) -> None:
        head = (await self.client.get("/api/bootstrap")).json()["room"]["throughSeq"]
        self._task = asyncio.create_task(self._watch(head))

    async def _watch(self, head: int) -> None:
        async for frame in sse.frames(self._stream, self.base_url, after_seq=head):
            if frame.data is None:
                continue
            event = json.loads(frame.data)
            turn_id = event.get("body", {}).get("turnId")
            if turn_id is None:
                continue
            self.seen.setdefault(turn_id, {}).setdefault(event["type"], frame.at)
            if event["type"] == "turn.completed" and turn_id in self.waiting:
                self.waiting.pop(turn_id).set_result(None)

    async def turn(self, keep: bool) -> dict[str, float]:
        """One message, waited to its ``turn.completed``: when it was sent (``sent``), its 202 read
        (``accepted``) and each event type of its Turn first read from SSE (perf_counter seconds)."""
        body = {"clientCommandId": f"pair-{uuid.uuid4()}", "to": ["agent:kimi"], "content": "ping"}
        sent = time.perf_counter()
        response = await self.client.post("/api/messages", json=body)
        accepted = time.perf_counter()
        response.raise_for_status()
        turn_id = response.json()["turns"][0]["turnId"]
        done = self.waiting[turn_id] = asyncio.get_running_loop().create_future()
        if "turn.completed" in self.seen.get(turn_id, {}):
            done.set_result(None)
        await asyncio.wait_for(done, 10)
        seen = self.seen.pop(turn_id)
        if keep:
            self.figures.append(
                {
                    "accepted": accepted - sent,
                    "delta": seen["turn.content.delta"] - sent,
                    "reply": seen["message.created"] - sent,
                }
            )
        return {"sent": sent, "accepted": accepted, **seen}

    async def close(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        await self._stream.aclose()
        await self.client.aclose()


async def _run(urls: dict[str, str], turns: int, warmup: int) -> list[Side]:
    sides = [Side(name, url) for name, url in urls.items()]
    for side in sides:
        await side.open()
    try:
        for index in range(warmup + turns):
            for side in sides if index % 2 == 0 else sides[::-1]:
                await side.turn(keep=index >= warmup)
    finally:
        for side in sides:
            await side.close()
    return sides


def _ms(values: list[float]) -> str:
    quartiles = statistics.quantiles(values, n=4)
    return f"{statistics.median(values) * 1000:6.3f} ({quartiles[0] * 1000:.3f}-{quartiles[2] * 1000:.3f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.latency_pair", description=__doc__.splitlines()[0])
    parser.add_argument("base", type=Path, help="a checkout of GroupX (the baseline)")
    parser.add_argument("other", type=Path, help="another checkout (the change)")
    parser.add_argument("--turns", type=int, default=100, help="measured Turns per side")
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args(argv)
    servers = {}
    with tempfile.TemporaryDirectory(prefix="groupx-latency-pair-") as tmp:
        try:
            for name, checkout in (("base", args.base), ("other", args.other)):
                compare_servers.REPO = checkout.resolve()  # the server runs that checkout's code
                servers[name] = compare_servers.Server("start", Path(tmp) / name).start()
            sides = asyncio.run(
                _run({name: server.base_url for name, server in servers.items()}, args.turns, args.warmup)
            )
        finally:
            for server in servers.values():
                server.stop()
    base, other = sides
    print(f"{args.turns} Turns per side, alternated; ms: median (p25-p75); other - base: median of the pairs")
    for label, key in FIGURES:
        pairs = [o[key] - b[key] for b, o in zip(base.figures, other.figures, strict=True)]
        print(
            f"{label:20} base {_ms([f[key] for f in base.figures])}   other {_ms([f[key] for f in other.figures])}"
            f"   other - base {statistics.median(pairs) * 1000:+.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

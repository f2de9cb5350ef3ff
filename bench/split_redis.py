"""What split mode asks of Redis: ``python -m bench.split_redis`` (docs/PERFORMANCE.md "Round 7").

Two counts that the shared machine's load does not move, beside the timings that it does:

1. **Redis commands per Turn.** A split room (``bench/split.py``: the web process and one agents'
   worker, ``make bench``'s instant fake agents) over a throwaway redis-server; a few Turns warm it
   up, then ``INFO commandstats`` is reset and ``--turns`` sequential messages go to one agent,
   each waited for on SSE (``bench/latency.py``). Commands run inside a Lua script count too.
2. **One hop on the layer**: ``group_send`` to a group on one channel layer instance, ``receive``
   on another's channel in that group, on an otherwise idle loop, for channels_redis's queue layer
   and its pub/sub layer (what settings.py selects, docs/DECISIONS.md D59).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import redis
from channels_redis.core import RedisChannelLayer
from channels_redis.pubsub import RedisPubSubChannelLayer

from bench import latency
from bench.split import SplitBenchServer
from tests.split.processes import RedisServer


def commands_per_turn(redis_url: str, workdir: Path, turns: int, content: str) -> dict:
    client = redis.Redis.from_url(redis_url)
    server = SplitBenchServer(workdir, redis_url).start()
    try:
        asyncio.run(latency.run(server.base_url, messages=3, warmup=0, content=content))
        client.config_resetstat()
        asyncio.run(latency.run(server.base_url, messages=turns, warmup=0, content=content))
        stats = client.info("commandstats")
    finally:
        server.stop()
    calls = {
        name.removeprefix("cmdstat_"): row["calls"] / turns for name, row in stats.items() if "resetstat" not in name
    }
    return {
        "perTurn": round(sum(calls.values()), 1),
        "byCommand": {name: round(count, 2) for name, count in sorted(calls.items(), key=lambda kv: -kv[1])},
    }


async def one_hop(layer_class, redis_url: str, rounds: int = 300) -> dict:
    sender, receiver = layer_class(hosts=[redis_url], prefix="hop:"), layer_class(hosts=[redis_url], prefix="hop:")
    channel = await receiver.new_channel()
    await receiver.group_add("hop", channel)
    sent, received = [], []
    for index in range(rounds):
        started = time.perf_counter()
        await sender.group_send("hop", {"type": "bus.items", "items": [["c", index, b"x" * 300]]})
        sent.append(time.perf_counter() - started)
        await receiver.receive(channel)
        received.append(time.perf_counter() - started)
    await receiver.group_discard("hop", channel)
    return {
        "groupSendMs": round(statistics.median(sent) * 1000, 3),
        "sendToReceivedMs": round(statistics.median(received) * 1000, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.split_redis", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument(
        "--content",
        default="",
        help="prefix of each message, e.g. a fake directive: "
        "'[[fake: stream n=4 delay_ms=0]] ' (four deltas per Turn, like bench-compare's agent)",
    )
    args = parser.parse_args(argv)
    if shutil.which("redis-server") is None:
        print("redis-server is not installed (make test-split installs it)", file=sys.stderr)
        return 1
    root = Path(tempfile.mkdtemp(prefix="groupx-bench-split-redis-"))
    redis_server = RedisServer(root).start()
    try:
        print("Redis commands per Turn:", commands_per_turn(redis_server.url, root / "split", args.turns, args.content))
        for layer_class in (RedisChannelLayer, RedisPubSubChannelLayer):
            print(f"one hop, {layer_class.__name__}:", asyncio.run(one_hop(layer_class, redis_server.url)))
    finally:
        redis_server.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

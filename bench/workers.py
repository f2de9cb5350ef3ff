"""One agents' worker against two, on PostgreSQL and Redis: ``python -m tests.pg.cluster -- python -m
bench.workers`` (docs/PERFORMANCE.md "Several workers", docs/DECISIONS.md D58).

Each setup gets a fresh room (its own database on the throwaway cluster, fsync off as in the test
tier) with ``make bench``'s three instant fake agents, one daphne web process and a redis-server on
a free loopback port: ``one`` runs ``manage.py runworker groupx-agents`` once (every agent), ``two``
runs it with ``--agents kimi,hermes`` and ``--agents grok``. The workloads are ``make bench``'s:
latency (sequential messages to kimi) and throughput (a burst over the three agents). The setups
alternate for ``--rounds``; prints the JSON of every round.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from bench.postgresql import measure  # the same two workloads, on a server it starts and stops
from bench.split import SplitBenchServer
from tests.pg.databases import cluster_url, create_database
from tests.split.processes import RedisServer

SETUPS = {"one": (None,), "two": ("kimi,hermes", "grok")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.workers", description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=50, help="sequential messages for latency")
    parser.add_argument("--burst", type=int, default=300, help="messages for throughput")
    parser.add_argument("--rounds", type=int, default=2, help="each setup this many times, alternating")
    args = parser.parse_args(argv)
    cluster = cluster_url()
    if cluster is None:
        parser.error("run it through python -m tests.pg.cluster (GROUPX_TEST_PG_URL)")
    root = Path(tempfile.mkdtemp(prefix="groupx-bench-workers-"))
    redis = RedisServer(root).start()
    rounds = []
    try:
        for round_number in range(args.rounds):
            results = {}
            for setup, worker_agents in SETUPS.items():
                print(f"[bench.workers] round {round_number + 1}: {setup} worker(s)", file=sys.stderr, flush=True)
                name = f"groupx_bench_{setup}_{round_number}"
                server = SplitBenchServer(
                    root / name, redis.url, storage_url=create_database(cluster, name), worker_agents=worker_agents
                )
                results[setup] = measure(server, messages=args.messages, burst=args.burst)
            rounds.append(results)
    finally:
        redis.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(rounds, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""PostgreSQL beside SQLite: latency and throughput of the same room on each store (docs/PERFORMANCE.md).

``python -m tests.pg.cluster -- python -m bench.postgresql``: the cluster is a throwaway one on
loopback (fsync off, as a test cluster: the figures compare the write paths, not the disks). Each
store gets a fresh room with the three instant fake agents; the two run one after the other.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path

from bench import latency, throughput
from bench.server import BenchServer
from tests.pg.databases import cluster_url, create_database


def measure(server: BenchServer, *, messages: int, burst: int) -> dict:
    server.start()
    try:
        return {
            "latency": asyncio.run(latency.run(server.base_url, messages=messages)),
            "throughput": asyncio.run(throughput.run(server.base_url, messages=burst)),
        }
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=50, help="sequential messages for latency")
    parser.add_argument("--burst", type=int, default=200, help="messages for throughput")
    args = parser.parse_args()
    cluster = cluster_url()
    if cluster is None:
        parser.error("run it through python -m tests.pg.cluster (GROUPX_TEST_PG_URL)")
    root = Path(tempfile.mkdtemp(prefix="groupx-bench-pg-"))
    results = {
        "sqlite": measure(BenchServer(root / "sqlite"), messages=args.messages, burst=args.burst),
        "postgresql": measure(
            BenchServer(root / "postgresql", storage_url=create_database(cluster, "groupx_bench")),
            messages=args.messages,
            burst=args.burst,
        ),
    }
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

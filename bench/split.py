"""Split mode against the embedded default, same machine, same run: ``python -m bench.split``.

Each mode gets a fresh room with the three instant fake agents of ``bench/server.py``; split mode is
that daphne process with ``channelLayer.redisUrl`` (it runs no agent) plus one ``manage.py runworker
groupx-agents``, over a redis-server on a free loopback port with no persistence. The workloads are
``make bench``'s: latency (sequential messages), throughput with the fan-out SSE clients attached,
and the fan-out's delivery. Prints a table and the JSON (docs/PERFORMANCE.md "Split mode").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

from bench import latency, throughput
from bench.fanout import FanOut
from bench.server import REPO, BenchServer, _die_with_parent, settle, wait_until
from tests.server import free_port as _free_port
from tests.split.processes import RedisServer

PLANS = {
    "full": {"latency": 50, "throughput": 200, "clients": 50},
    "quick": {"latency": 10, "throughput": 30, "clients": 5},
}


class SplitBenchServer(BenchServer):
    """The web process (daphne, on groupx.json's port so the agents' MCP URL reaches it) and one
    agents' worker, over the given Redis. ``worker_agents``: one worker per entry, started with
    ``--agents <entry>`` (None: every agent; bench/workers.py, docs/DECISIONS.md D58)."""

    def __init__(
        self,
        workdir: Path,
        redis_url: str,
        *,
        storage_url: str | None = None,
        worker_agents: tuple[str | None, ...] = (None,),
    ):
        super().__init__(workdir, storage_url=storage_url)
        config = json.loads(self.config_path.read_text())
        self.port = _free_port()
        config["server"]["port"] = self.port
        config["channelLayer"] = {"redisUrl": redis_url}
        self.config_path.write_text(json.dumps(config))
        self.worker_agents = worker_agents
        self.workers: list[subprocess.Popen] = []

    def start(self, timeout: float = 60.0) -> SplitBenchServer:
        self.migrate()
        for number, agents in enumerate(self.worker_agents, start=1):
            command = [sys.executable, "manage.py", "runworker", "groupx-agents"]
            with open(self.workdir / f"worker{number}.log", "ab") as log:
                self.workers.append(
                    subprocess.Popen(
                        command + (["--agents", agents] if agents else []),
                        cwd=REPO,
                        env=self.env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        preexec_fn=_die_with_parent,
                    )
                )
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "daphne",
                    "-b",
                    "127.0.0.1",
                    "-p",
                    str(self.port),
                    "groupx_site.asgi:application",
                ],
                cwd=REPO,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )
        self.base_url = f"http://127.0.0.1:{self.port}"
        wait_until(self._agents_ready, timeout, "all three agents ready (reported by the worker)")
        settle(self.proc.pid)
        return self

    def stop(self, timeout: float = 20.0) -> None:
        super().stop(timeout)
        for worker in self.workers:
            if worker.poll() is None:
                worker.terminate()
                worker.wait(timeout)


def measure(server: BenchServer, plan: dict) -> dict:
    results = {"latency": asyncio.run(latency.run(server.base_url, messages=plan["latency"]))}
    fan = FanOut(server.base_url, plan["clients"])
    fan.start()
    results["throughput"] = asyncio.run(throughput.run(server.base_url, messages=plan["throughput"]))
    head = httpx.get(f"{server.base_url}/api/bootstrap", timeout=10).json()["room"]["throughSeq"]
    results["fanout"] = fan.finish(server.durable_seqs(head))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.split", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small counts: a smoke run, not the figures")
    parser.add_argument(
        "--latency-only",
        action="store_true",
        help="only the sequential messages (POST -> each step on SSE), the figure of D59",
    )
    args = parser.parse_args(argv)
    plan = PLANS["quick" if args.quick else "full"]
    if shutil.which("redis-server") is None:
        print("redis-server is not installed (make test-split installs it)", file=sys.stderr)
        return 1
    root = Path(tempfile.mkdtemp(prefix="groupx-bench-split-"))
    redis = RedisServer(root).start()  # the split tier's throwaway Redis on loopback
    results = {}
    try:
        for mode, server in (
            ("embedded", BenchServer(root / "embedded")),
            ("split", SplitBenchServer(root / "split", redis.url)),
        ):
            print(f"[bench.split] {mode}", file=sys.stderr, flush=True)
            server.start()
            try:
                results[mode] = (
                    measure(server, plan)
                    if not args.latency_only
                    else {"latency": asyncio.run(latency.run(server.base_url, messages=plan["latency"]))}
                )
            finally:
                server.stop()
    finally:
        redis.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

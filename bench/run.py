"""Entry point: ``python -m bench.run`` (``make bench``).

Two servers, each a real daphne subprocess with three fake ACP agents that answer instantly:
- "live" starts empty and runs latency, throughput alone, then throughput again with the fan-out
  clients attached (the issue's figure: the two runs tell the turn's cost from the fan-out's);
- "history" is seeded straight into SQLite while stopped (1,000 → 10,000 → 100,000 events) and
  restarted at each size for bootstrap; the replay runs at 10,000.
A separate history server keeps the live figures from depending on a big log and the bootstrap
figures from depending on what the live run wrote. Prints a table, writes bench/results/latest.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import shutil
import signal
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

from bench import bootstrap, latency, replay, report, throughput
from bench.fanout import FanOut
from bench.memory import cpu_seconds, peak_rss
from bench.server import BenchServer

RESULTS = Path(__file__).resolve().parent / "results" / "latest.json"
FULL = {"latency": 50, "throughput": 200, "clients": 50, "replay": 10_000, "sizes": (1_000, 10_000, 100_000)}
QUICK = {"latency": 10, "throughput": 30, "clients": 5, "replay": 2_000, "sizes": (1_000, 2_000)}


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def machine() -> dict:
    model = ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as cpuinfo:
        model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), "")
    return {
        "cpus": os.cpu_count(),
        "cpuModel": model,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadAverageAtStart": [round(x, 2) for x in os.getloadavg()],
    }


def head_seq(server: BenchServer) -> int:
    return httpx.get(f"{server.base_url}/api/bootstrap", timeout=10).json()["room"]["throughSeq"]


def with_cpu(server: BenchServer, result_fn) -> dict:
    """Run a workload and add the server process's own CPU seconds: a figure that, unlike wall
    time, does not move much when something else shares the machine."""
    before = cpu_seconds(server.proc.pid)
    result = result_fn()
    result["serverCpuSeconds"] = round(cpu_seconds(server.proc.pid) - before, 2)
    return result


def live_workloads(server: BenchServer, plan: dict, results: dict, memory: list) -> None:
    log(f"latency: {plan['latency']} sequential messages")
    results["latency"] = with_cpu(server, lambda: asyncio.run(latency.run(server.base_url, messages=plan["latency"])))
    log(f"throughput: {plan['throughput']} messages, no other SSE client")
    results["throughputAlone"] = with_cpu(
        server, lambda: asyncio.run(throughput.run(server.base_url, messages=plan["throughput"]))
    )
    log(f"throughput: {plan['throughput']} messages, with {plan['clients']} fan-out SSE clients attached")
    fan = FanOut(server.base_url, plan["clients"])
    fan.start()
    results["throughput"] = with_cpu(
        server, lambda: asyncio.run(throughput.run(server.base_url, messages=plan["throughput"]))
    )
    results["fanout"] = fan.finish(server.durable_seqs(head_seq(server)))
    memory.append({"phase": "live", **peak_rss(server.proc.pid)})


def history_workloads(server: BenchServer, plan: dict, results: dict, memory: list) -> None:
    server.migrate()
    results["bootstrap"] = {}
    for size in plan["sizes"]:
        rows = server.seed_events(size)
        log(f"bootstrap at {rows:,} events")
        server.start()
        try:
            results["bootstrap"][str(size)] = bootstrap.run(server.base_url, cpu=lambda: cpu_seconds(server.proc.pid))
            if size == plan["replay"]:
                head = head_seq(server)
                log(f"replay of {head:,} events from seq 0")
                results["replay"] = asyncio.run(replay.run(server.base_url, head))
            memory.append({"phase": f"history-{size}", **peak_rss(server.proc.pid)})
        finally:
            server.stop()


def memory_summary(samples: list) -> dict:
    children = [c for s in samples for c in s["children"]]
    return {
        "serverPeakMiB": max(s["server"]["peakMiB"] for s in samples),
        "childPeakMiB": max((c["peakMiB"] for c in children), default=0),
        "childrenPeakSumMiB": round(max(sum(c["peakMiB"] for c in s["children"]) for s in samples), 1),
        "samples": samples,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small counts: a smoke run, not the figures")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"JSON output (default {RESULTS})")
    parser.add_argument("--keep", action="store_true", help="keep the servers' work directories")
    args = parser.parse_args(argv)
    # SIGTERM (e.g. from `timeout`) unwinds like Ctrl-C, so the finally below stops the servers
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    plan = QUICK if args.quick else FULL
    if os.getloadavg()[0] > 1.0:
        log(
            f"warning: load average {os.getloadavg()[0]:.1f}: other work shares this machine; wall-clock figures"
            " will be worse than the server's own (see serverCpuSeconds)"
        )
    workdir = Path(tempfile.mkdtemp(prefix="groupx-bench-"))
    results: dict = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python -m bench.run" + (" --quick" if args.quick else ""),
        "machine": machine(),
        "plan": {**plan, "sizes": list(plan["sizes"])},
    }
    memory: list = []
    servers = [BenchServer(workdir / "live"), BenchServer(workdir / "history")]
    try:
        live, history = servers
        log(f"starting the live server in {live.workdir}")
        live.start()
        try:
            live_workloads(live, plan, results, memory)
        finally:
            live.stop()
        history_workloads(history, plan, results, memory)
    finally:
        for server in servers:
            server.stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    results["memory"] = memory_summary(memory)
    results["machine"]["loadAverageAtEnd"] = [round(x, 2) for x in os.getloadavg()]
    report.write(results, args.out)
    print(report.table(results))
    print(f"\nwritten to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

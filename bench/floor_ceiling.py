"""Part 1 of ``python -m bench.floor``: the throughput ceiling the processes that are not the server
set on this machine (the speed goals' throughput target).

During the side-by-side kit's throughput workload (``bench/anchor/groupx_bench.py --workloads
throughput``, as ``bench.compare`` runs it, servers started by ``bench.compare_servers.Server``)
three kinds of process share the machine's cores: the server, the harness (its HTTP posts and its
SSE monitor) and the three fake ACP agents (the server's child processes). The server's CPU is the
harness's own figure (``/proc/<pid>/stat`` of the server before/after the workload); the harness's
is its own ``getrusage`` over the workload (every thread of it, read by itself: the window is the
workload's, not the interpreter's start); the agents' is ``/proc/<pid>/stat`` of each child of the
server (``bench.compare_servers.tree``) before/after the harness run. A short latency run first
warms each server up (imports, caches, the agents' sessions), outside the measured window; its reply
p50/p95 and the server's peak RSS are reported beside, for the latency and memory targets.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from types import SimpleNamespace

from bench import compare, compare_table
from bench.compare_servers import Server, tree
from bench.memory import cpu_seconds


def run_harness(server: Server, workloads: str, out: Path, throughput_k: int, latency_n: int) -> dict:
    args = SimpleNamespace(workloads=workloads, latency_n=latency_n, throughput_k=throughput_k)
    return compare.run_harness(server, args, out)


def measure(kind: str, workdir: Path, reference: tuple | None, throughput_k: int, latency_n: int = 30) -> dict:
    """One server's throughput run split by process: ms of CPU per Turn of the server, the harness
    and the fake agents, and the turns/s the harness measured."""
    server = Server(
        kind, workdir, reference_dir=reference[0] if reference else None, node=reference[1] if reference else None
    )
    try:
        server.start()
        warmup = compare_table.figures(
            run_harness(server, "latency", workdir / "latency.json", throughput_k, latency_n)
        )
        agents = tree(server.pid)[1:]
        agents_before = {pid: cpu_seconds(pid) for pid in agents}
        document = run_harness(server, "throughput", workdir / "throughput.json", throughput_k, latency_n)
        agents_cpu = sum(cpu_seconds(pid) - before for pid, before in agents_before.items())
        gone = [pid for pid in agents if not Path(f"/proc/{pid}").exists()]
    finally:
        server.stop()
    throughput = next(r for r in document["results"] if r.get("workload") == "throughput")
    turns = throughput.get("turns_accepted") or 0
    if not turns:
        raise RuntimeError(f"{kind}: the throughput run accepted no Turn")
    found = compare_table.figures(document)
    return {
        "kind": kind,
        "turns": turns,
        "failed": throughput.get("failed"),
        "turns_per_s": found["turns_per_s"],
        "server_ms": found["cpu_ms_per_turn"],
        "harness_ms": round(throughput["workload_harness_cpu_s"] * 1000 / turns, 2),
        "agents_ms": round(agents_cpu * 1000 / turns, 2),
        "agent_processes": len(agents),
        "agents_gone": len(gone),  # an agent that exited mid-run takes its CPU with it
        # the frames the harness's one SSE client received per Turn (the monitor's events of this run)
        "sse_frames_per_turn": round(sum((document.get("monitor_event_type_counts") or {}).values()) / turns, 2),
        "reply_p50_ms": warmup["reply_p50_ms"],
        "reply_p95_ms": warmup["reply_p95_ms"],
        "rss_mb": found["rss_peak_mb"],
    }


def median_row(rows: list[dict]) -> dict:
    """The median of each figure over the rounds; ``rounds`` keeps each round's turns/s and server ms."""
    out = {
        "kind": rows[0]["kind"],
        "rounds": [{"turns_per_s": r["turns_per_s"], "server_ms": r["server_ms"]} for r in rows],
    }
    for key in rows[0]:
        values = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
        if key != "kind" and values:
            out[key] = statistics.median(values)
    return out

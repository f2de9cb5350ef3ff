"""Entry point: ``python -m bench.wakeups``: the system calls of one sequential Turn that hand work
between the server's threads, counted with ``strace`` (docs/PERFORMANCE.md "Round 6").

The CPU seconds of a Turn move with the machine's load (on a shared 2-core machine by ±50 % from
run to run); a count does not. Starts GroupX as ``bench.profile_turn`` does (``groupx start``, three
instant fake ACP agents), warms it up with 20 Turns, then traces the server process's threads
through ``--turns`` sequential Turns of the side-by-side harness's latency workload and prints,
per Turn:

- self-pipe wake-ups: a one-byte ``send`` of NUL, asyncio's ``call_soon_threadsafe`` waking the
  event loop (a database call's result, a hand-off from another thread);
- ``epoll_ctl``: twisted and asyncio (un)registering a socket or pipe with the selector;
- ``sendto``, ``write``: the other socket and pipe writes (HTTP answers, SSE frames, CLI prompts);
- futex wakes: one thread waking another (the GIL included, so this one moves with the load).

Needs ``strace`` (Debian's package) and permission to trace one's own processes.
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.compare_servers import Server
from bench.profile_turn import harness

SYSCALL = re.compile(r"\d+\s+(\w+)\(([0-9a-fx]+), (.*)")


def count(trace: Path) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    for line in trace.read_text().splitlines():
        match = SYSCALL.match(line)
        if not match:
            continue
        name, rest = match.group(1), match.group(3)
        if name in ("sendto", "write") and rest.startswith('"\\0", 1'):
            counts["self-pipe wake-ups"] += 1
        elif name == "futex":
            counts["futex wakes"] += "FUTEX_WAKE" in rest
        else:
            counts[name] += 1
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.wakeups", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument(
        "--workload",
        choices=("latency", "throughput"),
        default="latency",
        help="throughput: the side-by-side run's throughput workload (eight senders)",
    )
    args = parser.parse_args(argv)
    strace = shutil.which("strace")
    if strace is None:
        print("strace is not installed (Debian: apt-get install strace)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="groupx-wakeups-") as scratch:
        server = Server("start", Path(scratch)).start()
        trace = Path(scratch) / "strace.txt"
        try:
            harness(server, 20, Path(scratch) / "warmup.json")
            tracer = subprocess.Popen(
                [
                    strace,
                    "-f",
                    "-qq",
                    "-e",
                    "trace=sendto,write,epoll_ctl,futex",
                    "-e",
                    "signal=none",
                    "-o",
                    str(trace),
                    "-p",
                    str(server.pid),
                ],
                stderr=subprocess.DEVNULL,
            )
            time.sleep(1.0)  # strace attaches to every thread first (it prints nothing to wait on)
            result = harness(server, args.turns, Path(scratch) / "traced.json", args.workload)
            tracer.send_signal(signal.SIGINT)
            tracer.wait(timeout=60)
        finally:
            server.stop()
        counts = count(trace)
    turns = result["turns_accepted"] if args.workload == "throughput" else args.turns
    print(
        f"{turns} {'sequential' if args.workload == 'latency' else 'throughput'} Turns (groupx start)"
        + (f", {result['backpressure_rejections']} rejected posts" if args.workload == "throughput" else "")
        + ", per Turn:"
    )
    for name in ("self-pipe wake-ups", "epoll_ctl", "sendto", "write", "futex wakes"):
        print(f"  {name}: {counts[name] / turns:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

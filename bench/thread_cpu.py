"""Entry point: ``python -m bench.thread_cpu``: the server's CPU per Turn in the side-by-side run's
throughput workload (the figure the speed goals judges), split by the server's threads.

Starts GroupX as ``bench.compare`` does (three instant fake ACP agents), warms it up, then runs the
kit's throughput workload ``--rounds`` times (``--messages`` messages, each to all three agents,
eight senders back to back) and reads each thread's CPU from ``/proc/<pid>/task/<tid>/stat`` before
and after each round. No profiler is attached, so the figures carry no sampling overhead; py-spy's
``dump`` is asked once, after the warm-up, only for the names Python gave the threads (the kernel
knows them all as ``python``).

Also printed per round: turns/s and the harness's backpressure rejections (a 429
``QUEUE_CAPACITY_REACHED`` the harness retries: a whole post's work that queues nothing).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.compare_servers import ENTRY_POINTS, Server
from bench.profile_turn import harness

_TICK = os.sysconf("SC_CLK_TCK")


def thread_names(pid: int) -> dict[str, str]:
    """Thread id → the name Python gave it, from one ``py-spy dump`` (empty without py-spy)."""
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(py_spy).exists():
        return {}
    out = subprocess.run([py_spy, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=60).stdout
    return {tid: name for tid, name in re.findall(r'Thread (\d+) \(\w+\): "([^"]+)"', out)}


def thread_cpu(pid: int, names: dict[str, str]) -> Counter:
    """CPU seconds so far of each thread of ``pid``, by name (threads of one name summed)."""
    seconds: Counter = Counter()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        fields = stat.rsplit(")", 1)[1].split()
        seconds[names.get(tid, f"thread {tid}")] += (int(fields[11]) + int(fields[12])) / _TICK
    return seconds


def arguments(prog: str, description: str, argv: list[str] | None, messages: int = 100, rounds: int = 3):
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--messages", type=int, default=messages, help="messages per round (three Turns each)")
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--entry", choices=ENTRY_POINTS, default="start")
    return parser.parse_args(argv)


def measured_rounds(args, sample: Callable[[int, dict[str, str]], Any]) -> Iterator[tuple[dict, Any, Any]]:
    """Start the server, warm it up, then run ``args.rounds`` throughput rounds: yields each round's
    harness result with ``sample(pid, thread names)`` taken before and after it."""
    with tempfile.TemporaryDirectory(prefix="groupx-thread-cpu-") as scratch:
        server = Server(args.entry, Path(scratch)).start()
        try:
            harness(server, 60, Path(scratch) / "warmup.json", "throughput")
            names = thread_names(server.pid)
            for _ in range(args.rounds):
                before = sample(server.pid, names)
                result = harness(server, args.messages * 3, Path(scratch) / "round.json", "throughput")
                yield result, before, sample(server.pid, names)
        finally:
            server.stop()


def main(argv: list[str] | None = None) -> int:
    args = arguments("python -m bench.thread_cpu", __doc__.splitlines()[0], argv)
    for result, before, after in measured_rounds(args, thread_cpu):
        turns = result["turns_accepted"] or 1
        per_thread = {name: (after[name] - before.get(name, 0)) * 1000 / turns for name in after}
        shown = ", ".join(
            f"{name} {ms:.2f}" for name, ms in sorted(per_thread.items(), key=lambda kv: -kv[1]) if ms >= 0.01
        )
        print(
            f"{turns} Turns, {result['turns_per_s']} turns/s, {result['backpressure_rejections']} "
            f"rejected posts; server CPU {sum(per_thread.values()):.2f} ms per Turn: {shown}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

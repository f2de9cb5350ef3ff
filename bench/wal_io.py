"""Entry point: ``python -m bench.wal_io``: what the throughput workload makes SQLite write, per Turn
and by thread: counts, which the machine's load does not move as it moves CPU seconds.

Starts GroupX as ``bench.thread_cpu`` does (three instant fake ACP agents), warms it up, then runs
the kit's throughput workload ``--rounds`` times and reads, before and after each round, each
thread's ``/proc/<pid>/task/<tid>/io`` (``syscw``: write system calls, ``wchar``: bytes they
wrote) and its CPU. In WAL mode the writer thread's writes are the WAL's frames (a page and a
24-byte header each); the checkpointer thread's (``groupx-wal-checkpoint``, D67/D69) are the pages
it copies back into the database file, one ``pwrite`` each, plus the odd WAL-index write: so its
write calls per Turn are the pages a Turn costs the checkpoints, and its CPU is what copying them
(and syncing both files) costs.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from bench.thread_cpu import arguments, measured_rounds, thread_cpu

THREADS = ("groupx-db-write_0", "groupx-wal-checkpoint")


def thread_io(pid: int, names: dict[str, str]) -> dict[str, Counter]:
    """``syscw`` and ``wchar`` so far of each named thread of ``pid``."""
    found: dict[str, Counter] = {}
    for tid, name in names.items():
        try:
            text = Path(f"/proc/{pid}/task/{tid}/io").read_text()
        except (FileNotFoundError, PermissionError):
            continue
        fields = dict(line.split(": ") for line in text.splitlines())
        found.setdefault(name, Counter()).update({"calls": int(fields["syscw"]), "bytes": int(fields["wchar"])})
    return found


def _sample(pid: int, names: dict[str, str]) -> tuple[dict[str, Counter], Counter]:
    return thread_io(pid, names), thread_cpu(pid, names)


def main(argv: list[str] | None = None) -> int:
    args = arguments("python -m bench.wal_io", __doc__.splitlines()[0], argv, messages=300, rounds=2)
    for result, (io_before, cpu_before), (io_after, cpu_after) in measured_rounds(args, _sample):
        turns = result["turns_accepted"] or 1
        shown = []
        for name in THREADS:
            moved = io_after.get(name, Counter())
            moved.subtract(io_before.get(name, Counter()))
            cpu = (cpu_after[name] - cpu_before.get(name, 0)) * 1000 / turns
            shown.append(
                f"{name}: {moved['calls'] / turns:.1f} writes, {moved['bytes'] / 1024 / turns:.0f} KiB, "
                f"{cpu:.2f} ms CPU"
            )
        print(f"{turns} Turns, {result['turns_per_s']} turns/s; per Turn: " + "; ".join(shown), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

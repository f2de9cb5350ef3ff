"""The server's threads run on one CPU; the CLIs it starts do not (docs/DECISIONS.md D83).

Only one thread runs Python at a time (the GIL). A Turn passes it between the event loop's thread
and the writer thread a dozen times, and the readers and the checkpointer take it now and then.
When the kernel spreads these threads over CPUs, each pass is a wake-up sent to another CPU, and
the thread that wakes finds the other thread's data in the other CPU's cache. Threads that could
never run Python side by side gain nothing from being apart. On the 2-core machine of
``make bench-compare`` that cost 14 % of the server's CPU per throughput Turn (2.67 against
2.30 ms, ``bench.thread_cpu``) and ~15 % of a lone Turn's reply time (the p50 of
``bench.compare``).

``keep_threads_on_one_cpu`` runs first thing when the runtime starts (``groupx_site/process_runtime.py``).
It pins every thread of the process to the CPU the loop's thread is on at that moment; threads
started later inherit the pin from their creator. The kernel still places every other process,
and the CLIs above all must be free to use every CPU, so ``restore_in_child`` gives a child the
process's CPUs back between fork and exec (``agents/drivers/process.py``).

Nothing is pinned where the OS has no thread affinity (only Linux has it here), where the process
may use one CPU anyway, or when ``groupx.json`` sets ``server.threadsOnOneCpu`` to false.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

_before: frozenset[int] | None = None  # the process's CPUs before the pin: what children get back


def keep_threads_on_one_cpu() -> int | None:
    """Pin every thread of this process, and the threads they start from now on, to the CPU the
    calling thread runs on; that CPU, or None when nothing was pinned."""
    global _before
    if not hasattr(os, "sched_setaffinity") or _before is not None:
        return None
    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2:
        return None
    cpu = _current_cpu()
    if cpu not in allowed:
        cpu = min(allowed)
    _before = frozenset(allowed)
    for thread_id in _thread_ids():
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            os.sched_setaffinity(thread_id, {cpu})
    return cpu


def restore_in_child() -> None:
    """In a child between fork and exec: the CPUs the process had before it was pinned. A CLI left
    on one CPU (its cgroup changed meanwhile) still starts: an error here would fail its launch."""
    if _before is not None:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, _before)


def _current_cpu() -> int | None:
    # Field 39 of /proc/<tid>/stat, "processor": the CPU the thread last ran on (this one: now).
    try:
        stat = Path("/proc/thread-self/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[36])
    except (OSError, ValueError, IndexError):
        return None


def _thread_ids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc/self/task")]
    except OSError:
        return [0]  # the calling thread only

"""Entry point: ``python -m bench.transaction_edges``: what a transaction's edges cost in-process
(docs/DECISIONS.md D72): CPU and function calls of one write call alone (BEGIN, one INSERT, COMMIT)
and of a group of three calls sharing one commit as ``groupx_site/speedups/group_commit.py`` runs them
(BEGIN, then per call a savepoint around one INSERT, then COMMIT).

Runs on a throwaway database set up as ``bench.turn_cost`` sets one up; the INSERTs go to a table of
its own. CPU is this thread's (``time.thread_time``), the median of seven runs of 500; calls are
counted once with ``sys.setprofile`` (Python's and C's), a figure the machine's load does not move.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.turn_cost import _configure, counting_calls

RUNS, EACH = 7, 500


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="groupx-edges-") as workdir:
        _configure(Path(workdir))
        from django.db import connection, transaction

        with connection.cursor() as cursor:
            cursor.execute("CREATE TABLE bench_edges (x INTEGER)")

        def insert(value: int) -> None:
            with connection.cursor() as cursor:
                cursor.execute("INSERT INTO bench_edges VALUES (%s)", [value])

        def alone() -> None:
            with transaction.atomic():
                insert(0)

        def group_of_three() -> None:
            with transaction.atomic():
                for value in range(3):
                    with transaction.atomic():
                        insert(value)

        for name, fn in (("one call alone", alone), ("a group of three calls", group_of_three)):
            runs = []
            for _ in range(RUNS):
                start = time.thread_time_ns()
                for _ in range(EACH):
                    fn()
                runs.append((time.thread_time_ns() - start) / EACH / 1000)
            print(
                f"{name:<24} CPU {statistics.median(runs):5.0f} µs (min {min(runs):.0f}), "
                f"{counting_calls(fn)[1]} function calls"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

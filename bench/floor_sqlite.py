"""Part 3 of ``python -m bench.floor``: the SQLite floor of one Turn, run as its own process
(``python -m bench.floor_sqlite``, one JSON document on stdout) so Django stays out of the others.

The Turns are ``bench.turn_cost``'s: the real functions in the order a lane calls them, in-process,
on a throwaway database (``post_message`` of a one-target message, the lane's head, the Context
Packet, claim, prompt invoked, started, finish). After a warm-up the database file is copied; then
``--turns`` Turns run through Django while every statement is recorded as Django hands it to
``sqlite3`` (``connection.execute_wrapper``: the SQL with its placeholders and its parameters, so
the statement cache behaves as in the server) and the ``COMMIT``/``ROLLBACK`` that ``sqlite3``
issues itself (``set_trace_callback``). The floor replays those statements, in order and in the
same transactions, with Python's ``sqlite3`` alone (no Django) on the copy, opened as GroupX opens
its store (WAL, ``synchronous=NORMAL``, foreign keys, ``temp_store=MEMORY``, ``BEGIN IMMEDIATE``
as recorded): the same rows are written from the same starting state. Its CPU per Turn is the
floor; the same Turns through Django (timed on further Turns, without the recorder) are beside it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from bench.turn_cost import Turns, _configure

PRAGMAS = ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA foreign_keys=ON", "PRAGMA temp_store=MEMORY")


class Recorder:
    """(sql, params, many) of each statement, in order; sqlite3's own COMMIT/ROLLBACK as (sql, None, False)."""

    def __init__(self) -> None:
        self.statements: list[tuple[str, object, bool]] = []
        self._inside = False

    def wrapper(self, execute, sql, params, many, context):
        converted = context["cursor"].cursor.convert_query(sql) if params is not None else sql
        self.statements.append((converted, list(params) if many else params, many))
        self._inside = True
        try:
            return execute(sql, params, many, context)
        finally:
            self._inside = False

    def trace(self, statement: str) -> None:
        if not self._inside and statement.split(None, 1)[0].upper() in ("COMMIT", "ROLLBACK"):
            self.statements.append((statement, None, False))


def open_like_groupx(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, timeout=5.0)  # autocommit: BEGIN/COMMIT as recorded
    for pragma in PRAGMAS:
        db.execute(pragma)
    return db


def replay(db: sqlite3.Connection, statements: list[tuple[str, object, bool]]) -> None:
    for sql, params, many in statements:
        if many:
            db.executemany(sql, params).fetchall()
        elif params is None:
            db.execute(sql).fetchall()
        else:
            db.execute(sql, params).fetchall()


def _plain(_name, fn, *args, **kwargs):
    return fn(*args, **kwargs)


def measure(turns: int, warmup: int) -> dict:
    """Records ``turns`` Turns, replays the first half to warm the replaying connection (its
    statement cache, SQLite's page cache), times the second half."""
    from django.db import connection

    with tempfile.TemporaryDirectory(prefix="groupx-bench-floor-sqlite-") as scratch:
        _configure(Path(scratch))
        runner = Turns()
        for _ in range(warmup):
            runner.run_one(_plain)
        database = Path(connection.settings_dict["NAME"])
        connection.close()  # the last connection checkpoints the WAL: the file alone is the state
        copy = Path(scratch) / "replay.sqlite3"
        shutil.copyfile(database, copy)
        recorder = Recorder()
        boundaries = []
        connection.ensure_connection()
        connection.connection.set_trace_callback(recorder.trace)
        with connection.execute_wrapper(recorder.wrapper):
            for _ in range(turns):
                runner.run_one(_plain)
                boundaries.append(len(recorder.statements))
        connection.connection.set_trace_callback(None)
        cpu = time.process_time()
        for _ in range(turns):
            runner.run_one(_plain)
        django_ms = (time.process_time() - cpu) * 1000 / turns
        connection.close()
        half = turns // 2
        warm, timed = recorder.statements[: boundaries[half - 1]], recorder.statements[boundaries[half - 1] :]
        db = open_like_groupx(copy)
        try:
            replay(db, warm)
            cpu = time.process_time()
            replay(db, timed)
            replay_ms = (time.process_time() - cpu) * 1000 / (turns - half)
        finally:
            db.close()
    statements = recorder.statements
    return {
        "turns_recorded": turns,
        "turns_timed": turns - half,
        "statements_per_turn": round(len(statements) / turns, 1),
        "transactions_per_turn": round(sum(1 for sql, *_ in statements if sql.upper().startswith("BEGIN")) / turns, 1),
        "sqlite_ms": round(replay_ms, 3),
        "django_ms": round(django_ms, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.floor_sqlite", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=400, help="Turns recorded (the second half is timed)")
    parser.add_argument("--warmup", type=int, default=60)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.turns, args.warmup)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""WAL checkpoints run on their own thread, not in the writer's commits (docs/DECISIONS.md D67).

These tests use the real writer thread (``groupx_site/store/db.py``, not inline) and its real Django
connection to the tier's file database, and the real checkpointer thread on the same file. In WAL
mode only a checkpoint writes the database file itself, so its size is the observable: the rows of
a burst reach it although the writer never checkpoints."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection, transaction

from groupx_site.speedups import wal_checkpoints
from groupx_site.store import db
from tests.server import wait_until
from tests.unit.writer_sql import on_writer as _on_writer

pytestmark = [
    pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's WAL only"),
    pytest.mark.django_db(transaction=True),
]

BURST_TRANSACTIONS = 60
ROWS_PER_TRANSACTION = 40  # 2,400 rows of 4,000 bytes: ~2,400 pages, past SQLite's 1,000-page default
ROW_BYTES = 4_000


@pytest.fixture
def checkpointer(settings):
    settings.GROUPX_DB_INLINE = False
    db.run_on_writer_thread(lambda: connection.close())  # its next connection is made while the checkpointer runs
    running = wal_checkpoints.start(db.run_on_writer_thread)
    yield running
    wal_checkpoints.stop()
    _on_writer("DROP TABLE IF EXISTS wal_burst")
    db.run_on_writer_thread(lambda: connection.close())  # later tests get a connection with SQLite's defaults


def _burst() -> None:
    _on_writer("CREATE TABLE wal_burst (body BLOB)")

    def write() -> None:
        for _ in range(BURST_TRANSACTIONS):
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO wal_burst VALUES (randomblob(%s))", [(ROW_BYTES,)] * ROWS_PER_TRANSACTION
                )

    db.run_on_writer_thread(write)


def test_the_writer_thread_leaves_checkpoints_to_the_checkpointer_and_a_burst_reaches_the_database_file(checkpointer):
    assert _on_writer("PRAGMA wal_autocheckpoint") == [(0,)]
    database = Path(connection.settings_dict["NAME"])
    _burst()
    burst_bytes = BURST_TRANSACTIONS * ROWS_PER_TRANSACTION * ROW_BYTES
    wait_until(
        lambda: database.stat().st_size >= burst_bytes,
        timeout=60,
        message="the burst's pages copied back into the database file",
    )


def test_after_a_burst_the_wal_is_cut_to_nothing_once_writes_pause(checkpointer):
    wal = Path(f"{connection.settings_dict['NAME']}-wal")
    _burst()
    wait_until(lambda: os.stat(wal).st_size == 0, timeout=60, message="the idle WAL truncated")


def _scratch_writer(database: Path) -> sqlite3.Connection:
    """A writer of its own on a scratch database, leaving checkpoints to the checkpointer as the
    writer thread does while it runs, so that only the checkpointer's passes copy frames back."""
    writer = sqlite3.connect(database, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("CREATE TABLE pages (body BLOB)")
    return writer


def _write_frames(writer: sqlite3.Connection, shm: Path, frames: int) -> None:
    """Small transactions (a page and a half each, like a Turn's) until the WAL holds ``frames``."""
    while wal_checkpoints.wal_index(shm)[1] < frames:
        writer.execute("INSERT INTO pages VALUES (randomblob(6000))")


def test_the_checkpointer_copies_nothing_back_until_the_wal_holds_sqlites_thousand_frames(tmp_path):
    database = tmp_path / "scratch.sqlite3"
    writer = _scratch_writer(database)
    shm = Path(f"{database}-shm")
    checkpointer = wal_checkpoints.Checkpointer(database)  # not started: its ticks are called here
    try:
        _write_frames(writer, shm, wal_checkpoints.CHECKPOINT_FRAMES - 50)
        checkpointer.tick()
        _, frames, copied = wal_checkpoints.wal_index(shm)
        assert (frames < wal_checkpoints.CHECKPOINT_FRAMES, copied) == (True, 0)

        _write_frames(writer, shm, wal_checkpoints.CHECKPOINT_FRAMES)
        checkpointer.tick()
        _, frames, copied = wal_checkpoints.wal_index(shm)
        assert copied == frames >= wal_checkpoints.CHECKPOINT_FRAMES

        writer.execute("INSERT INTO pages VALUES (randomblob(10))")  # finds every frame copied
        assert wal_checkpoints.wal_index(shm)[1] < 10, "the WAL started again from its beginning"
    finally:
        checkpointer._close()
        writer.close()


def test_passes_that_cannot_catch_up_end_on_the_writer_thread_only_past_twice_that(tmp_path):
    # A reader on an old snapshot keeps every pass from copying the frames after it, as writes back
    # to back do: the passes never catch up. The writer's queue is asked for the last pass only
    # once the WAL is past SOFT_BOUND_FRAMES.
    database = tmp_path / "scratch.sqlite3"
    writer = _scratch_writer(database)
    shm = Path(f"{database}-shm")
    on_writer = []
    checkpointer = wal_checkpoints.Checkpointer(database, run_on_writer=lambda fn: on_writer.append(fn()))
    reader = sqlite3.connect(database, isolation_level=None)
    try:
        _write_frames(writer, shm, 100)
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM pages").fetchall()  # holds this snapshot
        _write_frames(writer, shm, wal_checkpoints.CHECKPOINT_FRAMES)
        checkpointer.tick()
        _, frames, copied = wal_checkpoints.wal_index(shm)
        assert (copied < frames, on_writer) == (True, [])

        _write_frames(writer, shm, wal_checkpoints.SOFT_BOUND_FRAMES + 1)
        checkpointer.tick()
        assert len(on_writer) == 1
    finally:
        reader.close()
        checkpointer._close()
        writer.close()


# Another process opening the database tries to take the WAL index's "dead man switch" byte (offset
# 128 of the -shm file, SQLite's os_unix.c) alone: it gets it only when no connection holds it.
_TAKES_THE_DEAD_MAN_SWITCH = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 128)
    print("taken")
except OSError:
    print("held")
"""


def test_reading_the_wal_index_leaves_sqlites_own_locks_on_it_held(tmp_path):
    # Closing any descriptor of the -shm file would release the locks this process's connections
    # hold on it; another process would then truncate the index under them (a SIGBUS, seen in the
    # SIGKILL soak of the fault tier).
    database = tmp_path / "locks.sqlite3"
    writer = sqlite3.connect(database, isolation_level=None)
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("CREATE TABLE t (x)")
        writer.execute("INSERT INTO t VALUES (1)")
        shm = Path(f"{database}-shm")
        for _ in range(3):
            assert wal_checkpoints.wal_index(shm) is not None
        probe = subprocess.run(
            [sys.executable, "-c", _TAKES_THE_DEAD_MAN_SWITCH, str(shm)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert probe.stdout.strip() == "held"
    finally:
        writer.close()


def test_without_the_checkpointer_the_writer_keeps_sqlites_automatic_checkpoint(settings):
    settings.GROUPX_DB_INLINE = False
    db.run_on_writer_thread(lambda: connection.close())
    assert _on_writer("PRAGMA wal_autocheckpoint") == [(1000,)]


def test_a_writer_connection_opened_before_the_checkpointer_leaves_checkpoints_to_it_once_told(settings):
    settings.GROUPX_DB_INLINE = False
    db.run_on_writer_thread(lambda: connection.close())
    assert _on_writer("PRAGMA wal_autocheckpoint") == [(1000,)]  # open now, with SQLite's default
    wal_checkpoints.start(db.run_on_writer_thread)
    try:
        db.run_on_writer_thread(db.leave_checkpoints_to_their_thread)
        assert _on_writer("PRAGMA wal_autocheckpoint") == [(0,)]
    finally:
        wal_checkpoints.stop()
        db.run_on_writer_thread(lambda: connection.close())

"""WAL checkpoints on a thread of their own, not inside the writer's commits (docs/DECISIONS.md D67).

SQLite's automatic checkpoint (``wal_autocheckpoint``, 1,000 pages) runs inside the commit that
crosses it: the writer thread (``groupx_site/core/db.py``, D20), on which every write transaction
of the process queues, copies the WAL back into the database file and syncs it, ~5–35 ms under
load, once every ~13 sequential Turns, and every Turn queued behind it waits (the reply's p95).

While this checkpointer runs, the writer's connection turns the automatic checkpoint off
(``db.py``'s ``connection_created`` handler asks ``turns_off_autocheckpoint``), and this thread, with
its own connection, runs ``PRAGMA wal_checkpoint(PASSIVE)`` every ``TICK_SECONDS`` when the ``-wal``
file changed. PASSIVE takes no lock a writer or a reader waits for: it copies what no reader still
needs, and passes follow until one finds nothing new, so that the writer's next transaction finds
every frame copied and starts the WAL again from its beginning (``_catch_up``).

The WAL stays bounded. Under writes that never pause for a pass, past ``SOFT_BOUND_BYTES`` (SQLite's
own 1,000 pages) the tick's last, small pass runs while the writer thread waits for it. Past
``BOUND_BYTES`` (a reader that never lets go), a TRUNCATE checkpoint waits for readers
(``TRUNCATE_WAIT_SECONDS`` at most) and cuts the file to nothing; so do the first pass (start-up),
a pass once the WAL has been idle for ``IDLE_TICKS``, and the last (shutdown).

A fault (a full disk, a read-only folder, an I/O error) is reported to ``store_faults`` as a
write's would be, the connection is closed (one opened on a read-only folder would keep the WAL
index read-only for the whole process, D24), and the next pass tries again: the thread never dies
of it. Another checkpointer at work (``locked``) is not a fault: the pass is skipped.

PostgreSQL has no WAL file of ours: nothing here runs there.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

from django.conf import settings

from groupx_site.core import sqlite, store_faults, store_integrity

logger = logging.getLogger("groupx.wal_checkpoints")

TICK_SECONDS = 0.1  # between passes: ~750 WAL pages at the throughput bench's peak (~100 Turns/s)
SOFT_BOUND_BYTES = 4 * 1024 * 1024  # SQLite's own default (1,000 pages of 4 KiB): see _catch_up
BOUND_BYTES = 64 * 1024 * 1024  # past this, a TRUNCATE checkpoint waits for readers and cuts the WAL
# A TRUNCATE holds the write lock while it waits for readers to let go of the WAL: it gives up
# after this (and tries at the next occasion) rather than keep the writer thread waiting.
TRUNCATE_WAIT_SECONDS = 0.1
IDLE_TICKS = 20  # two seconds without a write: cut the WAL to nothing while nobody needs it
CATCH_UP_PASSES = 8  # PASSIVE passes in a row at most, while the writer keeps adding frames
THREAD_NAME = "groupx-wal-checkpoint"


class Checkpointer:
    def __init__(self, database: Path, *, run_on_writer: Callable[[Callable[[], object]], object] | None = None):
        self.database = database
        self.run_on_writer = run_on_writer
        self.wal = Path(f"{database}-wal")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
        self._connection: sqlite3.Connection | None = None
        self._seen: tuple[int, int] | None = None  # the -wal's (size, mtime) at the last pass
        self._idle = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """The last pass (a TRUNCATE) runs on the thread before it ends."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        self.checkpoint(truncate=True)  # start-up: whatever a previous process left
        while not self._stop.wait(TICK_SECONDS):
            self._tick()
        self.checkpoint(truncate=True)
        self._close()

    def _tick(self) -> None:
        try:
            stat = self.wal.stat()
        except FileNotFoundError:
            return
        now = (stat.st_size, stat.st_mtime_ns)
        if now != self._seen:
            self._idle = 0
            self.checkpoint(truncate=stat.st_size > BOUND_BYTES)
        elif stat.st_size > 0 and (idle := self._idle + 1) <= IDLE_TICKS:
            self._idle = idle
            if idle == IDLE_TICKS:
                self.checkpoint(truncate=True)

    def checkpoint(self, *, truncate: bool) -> None:
        """One pass; a store fault is reported and the connection closed, never raised."""
        if not self.database.exists() or store_faults.store_folder_is_read_only():
            # Not created yet (the migrations do that), or opening here would map the WAL index
            # read-only for the whole process (D24): the writer's calls report the fault.
            return
        try:
            connection = self._connection or self._open()
            if truncate:
                connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            else:
                self._catch_up(connection)
        except sqlite3.Error as error:
            self._close()
            if store_faults.classify(error) == "locked":
                return  # another checkpointer (another process's, a test's) is at work
            if store_faults.as_store_unavailable(error) is None:  # recorded for health when a fault
                store_integrity.note_if_damaged(error)
                logger.exception("WAL checkpoint failed")
        except Exception:  # the thread must outlive anything a pass meets
            self._close()
            logger.exception("WAL checkpoint failed")
        with contextlib.suppress(OSError):
            stat = self.wal.stat()
            self._seen = (stat.st_size, stat.st_mtime_ns)

    def _catch_up(self, connection: sqlite3.Connection) -> None:
        # A pass copies the frames there were when it began, and says so: the writer may have added
        # more meanwhile. The WAL starts again from its beginning (instead of growing) only at a
        # write that finds every frame copied, so passes follow until one finds no frame added since
        # the last: each copies what was written while the last one ran, fewer every time, and one
        # with nothing to copy costs next to nothing.
        last = -1
        for _ in range(CATCH_UP_PASSES):
            [(_busy, frames, copied)] = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            if frames == last and copied >= frames:
                return
            last = frames
        # Writes never paused long enough (a sustained burst): past the soft bound, the last pass
        # runs while the writer thread waits for it, so the next write finds every frame copied.
        if self.wal.stat().st_size > SOFT_BOUND_BYTES and self.run_on_writer is not None:
            self.run_on_writer(lambda: connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall())

    def _open(self) -> sqlite3.Connection:
        # mode=rw: never create the database (the migrations do that); autocommit, so a PRAGMA runs
        # outside any transaction as a checkpoint must.
        self._connection = sqlite3.connect(f"{self.database.as_uri()}?mode=rw", uri=True, isolation_level=None,
                                           timeout=TRUNCATE_WAIT_SECONDS, check_same_thread=False)
        return self._connection

    def _close(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(sqlite3.Error):
                self._connection.close()
            self._connection = None


_running: Checkpointer | None = None


def start(run_on_writer: Callable[[Callable[[], object]], object]) -> Checkpointer | None:
    """Start this process's checkpointer (idempotent); None on PostgreSQL or in the inline tier.
    ``run_on_writer(fn)`` runs ``fn`` on the writer thread and returns when it is done."""
    global _running
    if _running is not None:
        return _running
    database = settings.DATABASES["default"]
    if database["ENGINE"] != sqlite.ENGINE or settings.GROUPX_DB_INLINE:
        return None
    _running = Checkpointer(Path(database["NAME"]).resolve(), run_on_writer=run_on_writer)
    _running.start()
    return _running


def stop() -> None:
    global _running
    if _running is not None:
        _running.stop()
        _running = None


def turns_off_autocheckpoint() -> bool:
    """Whether a connection of the writer thread should leave checkpoints to this thread."""
    return _running is not None

"""WAL checkpoints on a thread of their own, not inside the writer's commits (docs/DECISIONS.md D67,
D69).

SQLite's automatic checkpoint (``wal_autocheckpoint``, 1,000 pages) runs inside the commit that
crosses it: the writer thread (``groupx_site/store/db.py``, D20), on which every write transaction
of the process queues, copies the WAL back into the database file and syncs it, ~5–35 ms under
load, once every ~13 sequential Turns, and every Turn queued behind it waits (the reply's p95).

While this checkpointer runs, the writer's connection turns the automatic checkpoint off
(``db.py``'s ``connection_created`` handler asks ``turns_off_autocheckpoint``), and this thread, with
its own connection, looks at the WAL index every ``TICK_SECONDS`` (one ``pread`` of the ``-shm``
file's header, through a descriptor it never closes: ``_held``) and runs
``PRAGMA wal_checkpoint(PASSIVE)`` once the WAL holds ``CHECKPOINT_FRAMES`` frames, SQLite's own
threshold (D69). A page that the Turns rewrite many times (the log's last page, an index's right
edge, the FTS structure record) is then copied once per 1,000 frames rather than once per tick.
PASSIVE takes no lock a writer or a reader waits for: it copies what no reader still needs, and
a second pass follows, which finds nothing new when the writes paused meanwhile, so that the
writer's next transaction finds every frame copied and starts the WAL again from its beginning
(``_catch_up``).

The WAL stays bounded. Under writes that never pause for a pass (the throughput bench's), passes
on this thread cannot catch up: past ``SOFT_BOUND_FRAMES`` the last, small one runs while the
writer thread waits for it, so the WAL starts again. Past ``BOUND_BYTES`` (a reader that never
lets go), a TRUNCATE checkpoint waits for readers (``TRUNCATE_WAIT_SECONDS`` at most) and cuts the
file to nothing; so do the first pass (start-up), a pass once the WAL has been idle for
``IDLE_TICKS`` (what is left under the threshold), and the last (shutdown).

A fault (a full disk, a read-only folder, an I/O error) is reported to ``store_faults`` as a
write's would be, the connection is closed (one opened on a read-only folder would keep the WAL
index read-only for the whole process, D24), and the next pass tries again: the thread never dies
of it. Another checkpointer at work (``locked``) is not a fault: the pass is skipped.

PostgreSQL has no WAL file of ours: nothing here runs there.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import struct
import threading
from collections.abc import Callable
from pathlib import Path

from django.conf import settings

from groupx_site.core import sqlite
from groupx_site.speedups import switches
from groupx_site.store import store_faults, store_integrity

logger = logging.getLogger("groupx.wal_checkpoints")

TICK_SECONDS = 0.1  # between looks at the WAL index: ~750 WAL frames at the throughput bench's peak
CHECKPOINT_FRAMES = 1000  # SQLite's own wal_autocheckpoint: a pass once the WAL holds this many frames
SOFT_BOUND_FRAMES = 2 * CHECKPOINT_FRAMES  # passes that cannot catch up end on the writer thread: _catch_up
BOUND_BYTES = 64 * 1024 * 1024  # past this, a TRUNCATE checkpoint waits for readers and cuts the WAL
# A TRUNCATE holds the write lock while it waits for readers to let go of the WAL: it gives up
# after this (and tries at the next occasion) rather than keep the writer thread waiting.
TRUNCATE_WAIT_SECONDS = 0.1
IDLE_TICKS = 20  # two seconds without a write: cut the WAL to nothing while nobody needs it
# PASSIVE passes in a row on this thread at most, while the writer keeps adding frames: the first
# copies the ~1,000 frames, the second catches up when writes paused meanwhile; under writes back
# to back no number of passes does (D69).
CATCH_UP_PASSES = 2
THREAD_NAME = "groupx-wal-checkpoint"


class Checkpointer:
    def __init__(self, database: Path, *, run_on_writer: Callable[[Callable[[], object]], object] | None = None):
        self.database = database
        self.run_on_writer = run_on_writer
        self.wal = Path(f"{database}-wal")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
        self._connection: sqlite3.Connection | None = None
        self.shm = Path(f"{database}-shm")
        self._seen: bytes | None = None  # the WAL index's header at the last tick
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
            self.tick()
        self.checkpoint(truncate=True)
        self._close()

    def tick(self) -> None:
        """One look at the WAL index (the thread's, every TICK_SECONDS): a pass when it is due."""
        index = wal_index(self.shm)
        if index is None:
            return  # no WAL index yet (or the store folder is gone): nothing to copy
        header, frames, copied = index
        if header != self._seen:  # a write committed (or the WAL started again) since the last tick
            self._seen = header
            self._idle = 0
            if frames >= CHECKPOINT_FRAMES and copied < frames:
                self.checkpoint(truncate=self._wal_bytes() > BOUND_BYTES)
        elif frames > 0 and (idle := self._idle + 1) <= IDLE_TICKS:
            self._idle = idle
            if idle == IDLE_TICKS:
                self.checkpoint(truncate=True)

    def _wal_bytes(self) -> int:
        try:
            return self.wal.stat().st_size
        except FileNotFoundError:
            return 0

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

    def _catch_up(self, connection: sqlite3.Connection) -> None:
        # A pass copies the frames there were when it began, and says so: the writer may have added
        # more meanwhile. The WAL starts again from its beginning (instead of growing) only at a
        # write that finds every frame copied, so a pass follows that finds no frame added since the
        # last when the writes paused: it copies what was written while the last one ran, and with
        # nothing to copy costs next to nothing. More passes rarely help (D69): under writes back to
        # back none catches up, and each one that copies anything syncs both files.
        last = -1
        for _ in range(CATCH_UP_PASSES):
            [(_busy, frames, copied)] = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            if frames == last and copied >= frames:
                return
            last = frames
        # Writes never paused long enough (writes back to back): past the soft bound, the last pass
        # runs while the writer thread waits for it, so the next write finds every frame copied. It
        # copies only what was written during the passes above (a few milliseconds of writes). Under
        # it, the next tick tries again: between sequential Turns the writes do pause.
        index = wal_index(self.shm)
        if index is not None and index[1] > SOFT_BOUND_FRAMES and self.run_on_writer is not None:
            self.run_on_writer(lambda: connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall())

    def _open(self) -> sqlite3.Connection:
        # mode=rw: never create the database (the migrations do that); autocommit, so a PRAGMA runs
        # outside any transaction as a checkpoint must.
        self._connection = sqlite3.connect(
            f"{self.database.as_uri()}?mode=rw",
            uri=True,
            isolation_level=None,
            timeout=TRUNCATE_WAIT_SECONDS,
            check_same_thread=False,
        )
        return self._connection

    def _close(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(sqlite3.Error):
                self._connection.close()
            self._connection = None


def wal_index(shm: Path) -> tuple[bytes, int, int] | None:
    """The WAL index's header (its first copy: it changes at every commit and at every start of
    the WAL), its last frame (``mxFrame``) and the frames copied back so far (``nBackfill``), read
    from the ``-shm`` file (SQLite's wal.c layout, native byte order); None without one. Read
    without SQLite's locks: a torn value only moves a pass by one tick."""
    raw = _index_file(shm)
    if raw is None or len(raw) < _INDEX_BYTES:
        return None
    return raw[:_HEADER_BYTES], struct.unpack_from("=I", raw, 16)[0], struct.unpack_from("=I", raw, 96)[0]


# The -shm files read here, each held open for the life of the process: path → (descriptor, inode).
# Closing ANY descriptor of a file releases every POSIX lock the process holds on it, SQLite's own
# included: its shared "dead man switch" lock on the WAL index, and its readers' marks. Another
# process opening the database would then take that lock alone, believe no connection uses the
# index, and truncate and rebuild it under this process's mapping of it (SIGBUS) and its readers
# (a corrupt read). So a descriptor is closed only once its file is no longer the one at the path:
# SQLite unlinks the index only when no connection of any process holds it.
_held: dict[str, tuple[int, int]] = {}
_held_lock = threading.Lock()


def _index_file(shm: Path) -> bytes | None:
    with _held_lock:
        try:
            inode = os.stat(shm).st_ino
        except OSError:
            return None
        fd, held_inode = _held.get(str(shm), (None, None))
        if fd is None or held_inode != inode:
            if fd is not None:
                os.close(fd)  # the file unlinked: no connection holds a lock on it any more
                del _held[str(shm)]
            try:
                fd = os.open(shm, os.O_RDONLY)
            except OSError:
                return None
            _held[str(shm)] = (fd, os.fstat(fd).st_ino)
        return os.pread(fd, _INDEX_BYTES, 0)


_HEADER_BYTES = 48  # WalIndexHdr; mxFrame at byte 16
_INDEX_BYTES = 100  # two headers, then WalCkptInfo.nBackfill at byte 96

_running: Checkpointer | None = None


def start(run_on_writer: Callable[[Callable[[], object]], object]) -> Checkpointer | None:
    """Start this process's checkpointer (idempotent); None on PostgreSQL or in the inline tier.
    ``run_on_writer(fn)`` runs ``fn`` on the writer thread and returns when it is done."""
    global _running
    if _running is not None:
        return _running
    database = settings.DATABASES["default"]
    if database["ENGINE"] != sqlite.ENGINE or settings.GROUPX_DB_INLINE or not switches.is_on("walCheckpoints"):
        return None  # SQLite checkpoints by itself, on the thread that commits
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

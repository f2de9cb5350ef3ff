"""Where async code does its database work (docs/DECISIONS.md D20).

- ``write(fn)``: every write transaction of the process (the POST that queues Turns, the lanes'
  claim/started/finish, MCP tools, memory, sessions) runs on **one long-lived thread**. SQLite
  admits one writer at a time, and a writer that finds the lock taken sleeps in SQLite's busy
  handler (1, 2, 5, 10 … ms) before trying again; on one thread, writers queue in Python, in
  arrival order, and never meet the lock. The thread's connection lives as long as the process,
  instead of being opened (PRAGMAs, function registrations) for every request. On SQLite, a Turn's
  hot calls queued together share one commit (``group_commit.py``, docs/DECISIONS.md D68).
- ``read(fn)``: reads that need no write lock (SSE pages, bootstrap, health, ask snapshots) run on
  a few long-lived reader threads; WAL readers never wait for the writer.

A store fault (disk full, read-only, locked past the busy timeout, …) leaves both as
``StoreUnavailable`` (503 ``STORE_UNAVAILABLE``) and is remembered for health; a write call that
commits rows clears it (``groupx_site/store/store_faults.py``, docs/DECISIONS.md D24).

Other processes (management commands) still take SQLite's lock as before, and Django's sync views
(admin, setup) keep their per-request thread; only hot paths and the runtime come through here.

Inline mode (``settings.GROUPX_DB_INLINE``, the in-process test tier, docs/DECISIONS.md D29): both
run ``fn`` on the thread that drives the event loop from synchronous code (asgiref's
``async_to_sync`` hands thread-sensitive work back to it), so a test's database work happens on its
own connection, inside the ``db`` fixture's transaction, in the order the test awaits it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import queue
import sqlite3
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created

from groupx_site.speedups import group_commit, handoff, wal_checkpoints
from groupx_site.store import postgresql, store_faults, store_integrity

WRITER_THREAD = "groupx-db-write"


# A groupable call: (loop, future, context, fn, args, kwargs), as ``_run_then_post`` takes it.
_Call = tuple[Any, ...]
# What the writer's queue holds: (fn, args) to run, or (None, call) for a call that may share a commit.
_Queued = tuple[Callable[..., None] | None, tuple[Any, ...]]


class _WriterThread:
    """The one writer thread: it runs the calls put on its queue, in arrival order. Lighter than a
    one-worker ``ThreadPoolExecutor`` (no concurrent Future, work item or idle semaphore per call,
    docs/DECISIONS.md D68): a write call's result goes back to its loop by ``handoff.deliver``.

    Started by the first call. At the interpreter's exit the calls already queued still run, then
    the thread ends (as the executor's worker did); a call submitted after that raises RuntimeError."""

    def __init__(self, name: str):
        self.name = name
        # (fn, args) to run, (None, call) for a call that may share a commit, None to stop.
        self._calls: queue.SimpleQueue[_Queued | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stopped = False

    def submit(self, fn: Callable[..., None], *args: Any) -> None:
        """``fn(*args)`` on the thread; ``fn`` must not raise (what it runs reports its own errors)."""
        self._put((fn, args))

    def submit_groupable(self, call: _Call) -> None:
        """``_run_then_post(*call)``, or with the groupable calls queued beside it in one commit."""
        self._put((None, call))

    def _put(self, item: _Queued) -> None:
        if self._thread is None or self._stopped:
            self._start()
        self._calls.put(item)

    def _start(self) -> None:
        with self._lock:
            if self._stopped:
                raise RuntimeError("cannot schedule new calls after interpreter shutdown")
            if self._thread is None:
                # A daemon thread, stopped by atexit: atexit runs after the process's other
                # non-daemon threads ended, so what they queued on their way out still runs.
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
                atexit.register(self._stop)

    def _run(self) -> None:
        held = None  # taken from the queue while gathering a group but not of it: it runs next
        while True:
            call = held if held is not None else self._calls.get()
            held = None
            if call is None or call is _STOP:
                return
            fn, args = call
            if fn is not None:
                fn(*args)
                continue
            group, held = self._gather(args)
            if len(group) == 1:
                _run_then_post(*args)
            else:
                group_commit.run_together(group, _run_then_post, _deliver_soon)
                _close_if_opened_read_only()

    def _gather(self, first: _Call) -> tuple[list[_Call], _Queued | None]:
        """``first`` (a groupable call) and the groupable calls from its loop queued right behind it;
        and the call taken from the queue that is not one of them, if any."""
        group = [first]
        if self._calls.empty() or not group_commit.available():
            return group, None
        while len(group) < group_commit.MOST_CALLS:
            try:
                queued = self._calls.get_nowait()
            except queue.Empty:
                break
            if queued is None:
                return group, _STOP
            if queued[0] is not None or queued[1][0] is not first[0]:
                return group, queued
            group.append(queued[1])
        return group, None

    def _stop(self) -> None:
        with self._lock:
            self._stopped = True
        self._calls.put(None)
        if self._thread is not None:
            self._thread.join()


_STOP: _Queued = (None, ())  # a stop taken from the queue while gathering a group (compared by identity)
_writer = _WriterThread(f"{WRITER_THREAD}_0")  # the name a one-worker executor gave it (benches read it)
P = ParamSpec("P")
R = TypeVar("R")
_readers = ThreadPoolExecutor(max_workers=4, thread_name_prefix="groupx-db-read")


def write(
    fn: Callable[P, R], *, clears_faults: bool = True, group_commit: bool = False
) -> Callable[P, Coroutine[Any, Any, R]]:
    """``fn`` as a coroutine function that runs on the writer thread. ``clears_faults=False`` for a
    tiny bookkeeping write (the lease's heartbeat) whose success proves nothing about a full disk.
    ``group_commit=True``: on SQLite the call may share one commit with other such calls queued
    beside it (``groupx_site/speedups/group_commit.py``); only for a call that may run inside another
    transaction (its own ``atomic`` blocks then savepoints): nothing in it checks
    ``in_atomic_block``, uses ``durable=True``, closes the connection or waits for a CLI."""
    return _on(_writer, _faults_as_codes(fn, clears=clears_faults), groupable=group_commit)


def read(fn: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """``fn`` as a coroutine function that runs on a reader thread."""
    return _on(_readers, _faults_as_codes(fn, clears=False))


def run_on_writer_thread(fn: Callable[[], Any]) -> Any:
    """``fn`` on the writer thread, from another thread, waiting for it: no write runs meanwhile."""
    done: Future[Any] = Future()
    _writer.submit(_run_into, done, fn)
    return done.result()


def _run_into(done: Future[Any], fn: Callable[[], Any]) -> None:
    try:
        done.set_result(fn())
    except BaseException as raised:  # the waiting thread raises it
        done.set_exception(raised)


def _on(
    executor: ThreadPoolExecutor | _WriterThread, fn: Callable[..., Any], *, groupable: bool = False
) -> Callable[..., Coroutine[Any, Any, Any]]:
    if settings.GROUPX_DB_INLINE:
        return sync_to_async(fn, thread_sensitive=True)

    async def call(*args: Any, **kwargs: Any) -> Any:
        # Not asgiref's sync_to_async: its context restore, shield and thread bookkeeping cost more
        # than the hand-off itself, and its result comes back in a wake-up of its own while the
        # call's commits post theirs (docs/DECISIONS.md D60). The call runs in a copy of the
        # caller's context, as there; a cancelled caller leaves the call to finish on its thread.
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        if groupable and isinstance(executor, _WriterThread):
            executor.submit_groupable((loop, future, contextvars.copy_context(), fn, args, kwargs))
        else:
            executor.submit(_run_then_post, loop, future, contextvars.copy_context(), fn, args, kwargs)
        try:
            return await future
        finally:
            # A call that raised (a 429 QUEUE_CAPACITY_REACHED, every refusal) raises here: the
            # error's traceback keeps this frame, whose ``future`` keeps the error, a cycle that left
            # the refused request and its response for the garbage collector (D76).
            del future

    return call


def _run_then_post(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Any],
    context: contextvars.Context,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> None:
    result = error = None
    with handoff.collecting(loop) as posts:
        try:
            result = context.run(fn, *args, **kwargs)
        except BaseException as raised:  # whatever ends the call, its caller must not wait forever
            error = raised
    # With the results of calls that finished before the loop took the last ones, if any (D68);
    # a closed loop gets nothing: nobody waits for the result.
    _deliver_soon(loop, future, posts, result, error)
    # The error's traceback keeps this frame: without these names it keeps nothing that keeps it (D76).
    del future, error


def _deliver_soon(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Any],
    posts: list[Any],
    result: Any,
    error: BaseException | None,
) -> None:
    handoff.deliver(loop, _deliver, loop, future, posts, result, error)


def _deliver(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Any],
    posts: list[Any],
    result: Any,
    error: BaseException | None,
) -> None:
    handoff.run_posts(loop, posts)  # the call's commits reach the tail and the lanes first, as before
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


def _total_changes(db: BaseDatabaseWrapper) -> int:
    """SQLite's count of rows changed on ``db``. PostgreSQL keeps no such count: there a write call
    that returned normally committed (or changed nothing), and -1 says "assume it wrote"."""
    if db.vendor != "sqlite":
        return -1
    raw = db.connection  # None until this thread's connection is opened
    return raw.total_changes if raw is not None else 0


def _note_if_opened_read_only(sender: object, connection: Any, **kwargs: Any) -> None:
    # SQLite maps one WAL index (the -shm file) per database for all the connections of a process.
    # Mapped first while the folder is read-only, it stays read-only for every connection, a new
    # writer's too, until the last connection holding it closes: a reader kept open from then on
    # would keep the store "read-only" after the folder is writable again. Such a connection is
    # closed after the call that opened it (``_faults_as_codes``).
    connection.groupx_opened_read_only = store_faults.store_folder_is_read_only()


def _leave_checkpoints_to_their_thread(sender: object, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    # A commit that crosses SQLite's automatic checkpoint copies the WAL back on the thread that
    # committed: on the writer thread every queued write waited for it (docs/DECISIONS.md D67).
    if (
        connection.vendor == "sqlite"
        and threading.current_thread().name.startswith(WRITER_THREAD)
        and wal_checkpoints.turns_off_autocheckpoint()
    ):
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA wal_autocheckpoint=0")


def leave_checkpoints_to_their_thread() -> None:
    """On the writer thread: a connection it opened before the checkpointer started follows the
    same rule from now on (one opened later does by itself, above)."""
    if connection.connection is not None:
        _leave_checkpoints_to_their_thread(None, connection)


connection_created.connect(_note_if_opened_read_only)
connection_created.connect(_leave_checkpoints_to_their_thread)
connection_created.connect(postgresql.repair_nul_on_postgresql)


def _close_if_opened_read_only(db: BaseDatabaseWrapper | None = None) -> None:
    db = db if db is not None else connections[DEFAULT_DB_ALIAS]
    if getattr(db, "groupx_opened_read_only", False) and not db.in_atomic_block:
        with contextlib.suppress(DatabaseError):
            db.close()


def _faults_as_codes(fn: Callable[..., Any], *, clears: bool) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        # This thread's connection, fetched once per call rather than through Django's connection
        # proxy for each of the checks around it (~1.3 µs a lookup; docs/DECISIONS.md D72).
        db = connections[DEFAULT_DB_ALIAS]
        try:
            return _call(db, *args, **kwargs)
        finally:
            _close_if_opened_read_only(db)

    def _call(db: BaseDatabaseWrapper, *args: Any, **kwargs: Any) -> Any:
        # Rows changed by a call that returned normally were committed: the store takes writes
        # again. A call that only read proves nothing about a full or read-only disk.
        before = _total_changes(db) if clears else 0
        try:
            result = fn(*args, **kwargs)
        except (DatabaseError, sqlite3.Error) as error:  # raw sqlite3 use is not wrapped by Django
            fault = store_faults.as_store_unavailable(error)
            if fault is None:
                store_integrity.note_if_damaged(error)  # health says so at once (D42)
                raise
            if not db.in_atomic_block:
                # A connection opened while the file system was read-only stays read-only after
                # it is writable again; one that met a full disk may hold a half-done state.
                # The next call opens a fresh one.
                with contextlib.suppress(DatabaseError):
                    db.close()
            raise fault from error
        if clears and (after := _total_changes(db)) and (after != before or after == -1):
            store_faults.clear()
        return result

    return call

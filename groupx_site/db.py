"""Where async code does its database work (docs/DECISIONS.md D20).

- ``write(fn)``: every write transaction of the process (the POST that queues Turns, the lanes'
  claim/started/finish, MCP tools, memory, sessions) runs on **one long-lived thread**. SQLite
  admits one writer at a time, and a writer that finds the lock taken sleeps in SQLite's busy
  handler (1, 2, 5, 10 … ms) before trying again; on one thread, writers queue in Python, in
  arrival order, and never meet the lock. The thread's connection lives as long as the process,
  instead of being opened (PRAGMAs, function registrations) for every request.
- ``read(fn)``: reads that need no write lock (SSE pages, bootstrap, health, ask snapshots) run on
  a few long-lived reader threads; WAL readers never wait for the writer.

Other processes (management commands) still take SQLite's lock as before, and Django's sync views
(admin, setup) keep their per-request thread; only hot paths and the runtime come through here.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import sync_to_async

_writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="groupx-db-write")
_readers = ThreadPoolExecutor(max_workers=4, thread_name_prefix="groupx-db-read")


def write(fn: Callable[..., Any]):
    """``fn`` as a coroutine function that runs on the writer thread."""
    return sync_to_async(fn, thread_sensitive=False, executor=_writer)


def read(fn: Callable[..., Any]):
    """``fn`` as a coroutine function that runs on a reader thread."""
    return sync_to_async(fn, thread_sensitive=False, executor=_readers)


"""A consistent read snapshot without taking SQLite's write lock.

``transaction.atomic()`` here begins IMMEDIATE (settings), which would serialise every reader
behind writers. A reader only needs WAL snapshot isolation, which a plain deferred ``BEGIN`` gives
once its first SELECT runs. On PostgreSQL, an atomic block at REPEATABLE READ, read only (READ
COMMITTED, the default, takes a fresh snapshot per statement).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.db import connection, transaction


@contextlib.contextmanager
def read_snapshot() -> Iterator[None]:
    if connection.vendor != "sqlite" or connection.in_atomic_block:
        with transaction.atomic():
            if not connection.savepoint_ids and connection.vendor == "postgresql":  # the outermost block
                with connection.cursor() as cursor:
                    cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield
        return
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("BEGIN DEFERRED")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("COMMIT")

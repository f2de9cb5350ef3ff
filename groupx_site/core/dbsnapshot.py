"""A consistent read snapshot without taking SQLite's write lock.

``transaction.atomic()`` here begins IMMEDIATE (settings), which would serialise every reader
behind writers. A reader only needs WAL snapshot isolation, which a plain deferred ``BEGIN`` gives
once its first SELECT runs. Outside SQLite, an atomic block is the snapshot.
"""

from __future__ import annotations

import contextlib

from django.db import connection, transaction


@contextlib.contextmanager
def read_snapshot():
    if connection.vendor != "sqlite" or connection.in_atomic_block:
        with transaction.atomic():
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

"""SQL run on the real writer thread's connection, for the tests that use that thread (not inline)."""

from __future__ import annotations

from django.db import connection

from groupx_site.store import db


def on_writer(sql: str, params: tuple = ()) -> list:
    """``sql`` on the writer thread's connection, waiting for it; the rows it returned."""

    def run() -> list:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()

    return db.run_on_writer_thread(run)

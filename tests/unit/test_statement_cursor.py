"""The apps' fixed statements run on one Django cursor kept per thread (rooms/sql.py ``execute``,
``one_row``, ``all_rows``; docs/DECISIONS.md D64): it is made once, yet query capture still sees
every statement, a reopened connection gets a new one, and no read is left open on it."""

from __future__ import annotations

import sqlite3

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from groupx_site.store import sql
from tests.unit.room import post

pytestmark = pytest.mark.skipif(connection.vendor != "sqlite", reason="the cursor is kept on SQLite only")


def test_statements_of_one_thread_share_one_cursor():
    sql.one_row("SELECT %s", [1])
    first = sql._held.cursor
    assert sql.one_row("SELECT %s", [2]) == (2,)
    assert sql.all_rows("SELECT %s UNION ALL SELECT %s", [3, 4]) == [(3,), (4,)]
    assert sql.execute("UPDATE rooms_event SET body = body WHERE seq < %s", [0]) == 0
    assert sql._held.cursor is first


def test_query_capture_sees_every_statement_and_ends_with_a_plain_cursor_again():
    sql.one_row("SELECT %s", [1])
    with CaptureQueriesContext(connection) as captured:
        post(["agent:alpha"], "counted")
    assert any("INSERT INTO" in query["sql"] and "rooms_event" in query["sql"] for query in captured.captured_queries)
    assert any("rooms_clientcommand" in query["sql"] for query in captured.captured_queries)
    sql.one_row("SELECT %s", [1])
    assert sql._held.logged is False


@pytest.mark.django_db(transaction=True)
def test_a_reopened_connection_gets_a_new_cursor():
    sql.one_row("SELECT %s", [1])
    before = sql._held.cursor
    connection.close()
    assert sql.one_row("SELECT %s", [5]) == (5,)
    assert sql._held.cursor is not before


@pytest.mark.django_db(transaction=True)
def test_a_read_of_several_rows_leaves_no_snapshot_open_on_the_cursor():
    for n in range(3):
        post(["agent:alpha"], f"row {n}")
    assert sql.one_row("SELECT seq FROM rooms_event ORDER BY seq", []) is not None  # three rows and more
    # Another connection writes and truncates the log: it could not while a read held its snapshot.
    other = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
    try:
        other.execute("UPDATE rooms_event SET body = body WHERE seq = (SELECT MIN(seq) FROM rooms_event)")
        busy, _, _ = other.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    finally:
        other.close()
    assert busy == 0

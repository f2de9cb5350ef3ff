"""GroupX's SQLite backend (groupx_site/speedups/sqlite, docs/DECISIONS.md D64) is Django's, with each
statement text's placeholder conversion done once and a short way for UTC datetimes: the same
text reaches SQLite, and a text seen before is not converted again."""

from __future__ import annotations

import contextlib
import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from django.db import OperationalError, connection, transaction
from django.db.backends.sqlite3.base import SQLiteCursorWrapper as DjangoCursor
from django.db.backends.sqlite3.operations import DatabaseOperations as DjangoOperations
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext
from django.utils import timezone as django_timezone

from groupx_site.speedups.sqlite import base
from memory import sql as memory_sql
from rooms import sql as rooms_sql
from rooms.models import Event
from turns import sql as turn_sql

pytestmark = pytest.mark.skipif(connection.vendor != "sqlite", reason="the SQLite backend only")


def fixed_statements() -> list[str]:
    """Every fixed statement of the apps' sql.py modules, as SQLite runs it."""
    found = []
    for module in (rooms_sql, turn_sql, memory_sql):
        for value in vars(module).values():
            if isinstance(value, dict) and "sqlite" in value:
                value = value["sqlite"]
            if isinstance(value, str) and "%s" in value:
                found.append(value)
    return found


@pytest.mark.parametrize(
    "query",
    [
        "SELECT 1",
        "SELECT * FROM t WHERE a = %s AND b LIKE 'x%%' AND c IN (%s, %s)",
        "SELECT '%%s', %s",
        *fixed_statements(),
    ],
)
def test_a_statement_is_converted_exactly_as_djangos_cursor_converts_it(query):
    assert base.format_to_qmark(query) == DjangoCursor.convert_query(None, query)


def test_a_statement_seen_before_is_not_converted_again():
    query = "SELECT %s AS a_text_no_other_test_runs"
    before = base.format_to_qmark.cache_info()
    first = base.format_to_qmark(query)
    again = base.format_to_qmark(query)
    after = base.format_to_qmark.cache_info()
    assert first is again
    assert (after.misses - before.misses, after.hits - before.hits) == (1, 1)


@pytest.mark.django_db
def test_the_connection_runs_statements_through_the_converting_cursor_and_the_orm_still_works():
    with connection.cursor() as cursor:
        assert isinstance(cursor.cursor, base.SQLiteCursorWrapper)
        cursor.execute("SELECT %s || '%%', %s", ["a", 2])
        assert cursor.fetchone() == ("a%", 2)
        # Named parameters (pyformat) go through Django's own conversion.
        cursor.execute("SELECT %(x)s + %(y)s", {"x": 1, "y": 2})
        assert cursor.fetchone() == (3,)
    assert connection.vendor == "sqlite"
    assert Event.objects.filter(seq__in=[1, 2, 3]).count() == 0


class Subclass(datetime):
    pass


@pytest.mark.parametrize(
    "value",
    [
        None,
        datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC),
        datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC),  # no microseconds: str leaves them out, as Django does
        datetime(2026, 3, 4, 5, 6, 7, 1, tzinfo=timezone(timedelta(0))),  # a zero offset that is not UTC itself
        datetime(2026, 3, 4, 5, 6, 7, 5, tzinfo=timezone(timedelta(hours=2))),
        datetime(2026, 10, 25, 2, 30, fold=1, tzinfo=ZoneInfo("Europe/Berlin")),
        datetime(2026, 3, 4, 5, 6, 7),  # naive
        Subclass(2026, 3, 4, 5, 6, 7, 8, tzinfo=UTC),
    ],
)
@pytest.mark.django_db
def test_a_datetime_is_adapted_to_the_text_djangos_sqlite_adapter_writes(value):
    ours = connection.ops.adapt_datetimefield_value(value)
    assert isinstance(connection.ops, base.DatabaseOperations)
    assert ours == DjangoOperations(connection).adapt_datetimefield_value(value)


@pytest.mark.django_db
def test_the_short_way_serves_timezone_now():
    now = django_timezone.now()
    assert now.tzinfo is UTC and connection.timezone is UTC
    assert connection.ops.adapt_datetimefield_value(now) == str(now.replace(tzinfo=None))


# ---- a transaction's edges on the connection itself (D72) ------------------------------------------


def _edges(atomic_blocks) -> None:
    """An outer block with a savepoint released and one rolled back."""
    with transaction.atomic():
        with transaction.atomic():
            pass
        with contextlib.suppress(ValueError), transaction.atomic():
            raise ValueError("rolled back to its savepoint")
    atomic_blocks.append("done")


@pytest.mark.django_db(transaction=True)
def test_begin_and_savepoints_run_without_a_django_cursor(monkeypatch):
    connection.ensure_connection()
    made = []
    real = connection.create_cursor
    monkeypatch.setattr(connection, "create_cursor", lambda *a, **k: made.append(1) or real(*a, **k))
    _edges([])
    assert made == []


@pytest.mark.django_db(transaction=True)
def test_query_capture_and_execute_wrappers_still_see_begin_and_every_savepoint_statement():
    seen = []

    def wrapper(execute, sql, params, many, context):
        seen.append(sql.split(" ")[0])
        return execute(sql, params, many, context)

    with CaptureQueriesContext(connection) as captured:
        _edges([])
    assert [query["sql"].split(" ")[0] for query in captured.captured_queries] == [
        "BEGIN",
        "SAVEPOINT",
        "RELEASE",
        "SAVEPOINT",
        "ROLLBACK",
        "RELEASE",
        "COMMIT",
    ]
    with connection.execute_wrapper(wrapper):
        _edges([])
    assert seen == ["BEGIN", "SAVEPOINT", "RELEASE", "SAVEPOINT", "ROLLBACK", "RELEASE"]  # COMMIT is no statement


@pytest.mark.django_db(transaction=True)
def test_a_savepoint_statement_that_fails_raises_djangos_error_not_the_drivers():
    with transaction.atomic(), pytest.raises(OperationalError) as raised:
        connection._savepoint_commit("never_made")
    assert type(raised.value).__module__.startswith("django.")
    assert isinstance(raised.value.__cause__, sqlite3.OperationalError)


@pytest.mark.django_db(transaction=True)
def test_no_savepoint_is_made_or_released_in_a_transaction_django_marked_broken():
    with transaction.atomic():
        sid = connection.savepoint()
        connection.needs_rollback = True  # what an error caught inside a block without a savepoint leaves
        with pytest.raises(TransactionManagementError):
            connection.savepoint()
        with pytest.raises(TransactionManagementError):
            connection.savepoint_commit(sid)
        assert connection.connection.execute("SELECT 1").fetchone() == (1,)  # the connection is whole


@pytest.mark.django_db(transaction=True)
def test_the_edges_reach_sqlite_as_the_texts_djangos_operations_give():
    connection.ensure_connection()
    reached = []
    connection.connection.set_trace_callback(reached.append)
    try:
        _edges([])
    finally:
        connection.connection.set_trace_callback(None)
    sids = [text.split('"')[1] for text in reached if text.startswith("SAVEPOINT")]
    ops = connection.ops
    assert reached == [
        "BEGIN IMMEDIATE",
        ops.savepoint_create_sql(sids[0]),
        ops.savepoint_commit_sql(sids[0]),
        ops.savepoint_create_sql(sids[1]),
        ops.savepoint_rollback_sql(sids[1]),
        ops.savepoint_commit_sql(sids[1]),
        "COMMIT",
    ]

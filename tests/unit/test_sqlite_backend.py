"""GroupX's SQLite backend (groupx_site/core/sqlite, docs/DECISIONS.md D64) is Django's, with each
statement text's placeholder conversion done once: the same text reaches SQLite, and a text seen
before is not converted again."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.backends.sqlite3.base import SQLiteCursorWrapper as DjangoCursor

from groupx_site.core.sqlite import base
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


@pytest.mark.parametrize("query", [
    "SELECT 1",
    "SELECT * FROM t WHERE a = %s AND b LIKE 'x%%' AND c IN (%s, %s)",
    "SELECT '%%s', %s",
    *fixed_statements(),
])
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

"""The SQL toolkit every app's ``sql.py`` uses (docs/DECISIONS.md D20, D32): model names read from
``_meta`` (``Names``), placeholders, one Django cursor kept per thread (``execute``, ``one_row``,
``all_rows``), values adapted as the model's fields would store them, and the few spellings that
differ between SQLite and PostgreSQL (``Dialect``). It knows no app's tables; each app writes SQL only
for its own, in its ``sql.py``. It lives in the ground so every layer may use it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar, cast

from django.core.exceptions import FieldDoesNotExist
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Field, Model

from groupx_site.core.text import StoredJSON, json_text

_T = TypeVar("_T")


class Names:
    """A model's table and columns, read from its ``_meta``: ``str(n)`` is the table (with its alias,
    ``"turns_turn t"``, when given one), ``n.field`` the column (``"t.status"`` with an alias).
    A field's attname works too (``n.parent_turn_id``). Unknown names raise FieldDoesNotExist."""

    def __init__(self, model: type[Model], alias: str = "") -> None:
        self._model = model
        self._alias = alias

    def __str__(self) -> str:
        table = self._model._meta.db_table
        return f"{table} {self._alias}" if self._alias else table

    def __getattr__(self, name: str) -> str:
        if name.startswith("_"):
            raise AttributeError(name)
        field = self._model._meta.get_field(name)
        if not isinstance(field, Field) or field.column is None:  # a reverse relation has no column
            raise FieldDoesNotExist(f"{self._model.__name__}.{name} has no column of its own")
        column = field.column
        return f"{self._alias}.{column}" if self._alias else column

    def list(self, names: tuple[str, ...]) -> str:
        """``a, b, c``: the columns of ``names``, in order."""
        return ", ".join(getattr(self, name) for name in names)


def placeholders(values: tuple[Any, ...] | list[Any]) -> str:
    """``%s, %s, …``: one placeholder per item of ``values`` (an IN-list bound from a constant)."""
    if not values:
        raise ValueError("an IN-list needs at least one value")
    return ", ".join(["%s"] * len(values))


# ---- running one statement -------------------------------------------------------------------------


class _HeldCursor(threading.local):
    """This thread's Django cursor for the statements below, and what it was made for."""

    db: Any = None
    raw: Any = None  # the DB-API connection under it: a reopened connection needs a new cursor
    logged = False  # a debug cursor (query capture on) or not
    cursor: Any = None


_held = _HeldCursor()


def _held_cursor() -> Any:
    """The thread's held cursor on SQLite, made again when the connection was reopened or query
    capture was switched on or off; None on another engine (a cursor per statement, as before)."""
    db = connections[DEFAULT_DB_ALIAS]
    if db.vendor != "sqlite":
        return None
    held, logged = _held, db.queries_logged
    if held.db is db and held.raw is db.connection and held.raw is not None and held.logged == logged:
        return held.cursor
    cursor = db.cursor()  # opens the connection if needed
    held.db, held.raw, held.logged, held.cursor = db, db.connection, logged, cursor
    return cursor


def _run(sql: str, params: list[Any], take: Callable[[Any], _T]) -> _T:
    cursor = _held_cursor()
    if cursor is not None:
        cursor.execute(sql, params)
        return take(cursor)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return take(cursor)


def execute(sql: str, params: list[Any]) -> int:
    """Run one statement; the rows it changed.

    ``execute``, ``one_row`` and ``all_rows`` run a statement on a Django cursor kept per thread
    (SQLite): opening and closing one per statement cost ~6 µs of the ~9 a short statement takes
    through Django, on ~26 statements per Turn (docs/DECISIONS.md D64). It is Django's cursor, so
    transactions, error wrapping and query capture behave as for any query; each takes every row
    its statement returns, so no statement is left open on the cursor (an unfinished read would
    hold its snapshot until the next statement). A read whose rows are consumed as they come
    (``packet_unread``) keeps a cursor of its own."""
    return _run(sql, params, _rowcount)


def one_row(sql: str, params: list[Any]) -> tuple[Any, ...] | None:
    """The first row of a statement that returns at most one (all are read), or None."""
    return _run(sql, params, _first)


def all_rows(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    return _run(sql, params, _all)


def _rowcount(cursor: Any) -> int:
    return cast(int, cursor.rowcount)


def _first(cursor: Any) -> tuple[Any, ...] | None:
    rows = cursor.fetchall()
    return cast(tuple[Any, ...], rows[0]) if rows else None


def _all(cursor: Any) -> list[tuple[Any, ...]]:
    return cast(list[tuple[Any, ...]], cursor.fetchall())


@functools.cache
def _ops() -> Any:
    """The default database's operations. Their adapters depend on the engine and the settings
    alone, fixed for the process, so they are fetched once instead of through Django's connection
    proxy for every value (~1.3 µs each, ~30 values a Turn; docs/DECISIONS.md D72)."""
    return connections[DEFAULT_DB_ALIAS].ops


def adapt_json(value: Any) -> str | None:
    """A JSONField value as the log's fields store it (``StoredJSON``): on SQLite compact JSON text in UTF-8, not ASCII-escaped (an emoji
    took 12 bytes as two ``\\u`` escapes, 4 as UTF-8; docs/PERFORMANCE.md "Text stored as UTF-8"),
    any lone surrogate as U+FFFD as the frames already sent it; jsonb on PostgreSQL. Rows written
    ASCII-escaped by earlier releases decode to the same values, so their frames do not change."""
    if value is None:
        return None
    ops = _ops()
    return json_text(value) if ops.connection.vendor == "sqlite" else ops.adapt_json_value(value, StoredJSON)


def adapt_datetime(value: datetime | None) -> str | None:
    """A DateTimeField value as the field stores it."""
    return cast(str | None, _ops().adapt_datetimefield_value(value))


class Dialect:
    """The few spellings that differ between SQLite and PostgreSQL (docs/DECISIONS.md D53). A statement
    that needs one is built once per engine (``per_engine``) and picked at run time (``on_this_engine``)."""

    def __init__(self, vendor: str) -> None:
        self.vendor = vendor

    def json_text(self, column: str, key: str) -> str:
        """The text of ``column``'s top-level ``key`` (NULL when absent)."""
        if self.vendor == "postgresql":
            return f"({column} ->> '{key}')"
        return f"json_extract({column}, '$.{key}')"

    def json_list(self) -> str:
        """A subquery over the items of a JSON list of strings bound to one placeholder."""
        if self.vendor == "postgresql":
            return "(SELECT jsonb_array_elements_text(%s::jsonb))"
        return "(SELECT value FROM json_each(%s))"

    def greatest(self, a: str, b: str) -> str:
        return f"GREATEST({a}, {b})" if self.vendor == "postgresql" else f"MAX({a}, {b})"

    def not_indexed(self, column: str) -> str:
        """``column`` as an expression SQLite's planner will not use an index for (the unary ``+``);
        PostgreSQL plans by its statistics and has no ``+`` for text, so there it is the column."""
        return column if self.vendor == "postgresql" else f"+{column}"

    @property
    def is_distinct_from(self) -> str:
        """``a IS NOT b`` of SQLite: true when they differ, NULLs compared as values."""
        return "IS DISTINCT FROM" if self.vendor == "postgresql" else "IS NOT"


ENGINES = ("sqlite", "postgresql")


def per_engine(build: Callable[[Dialect], str]) -> dict[str, str]:
    """One statement's text for each engine."""
    return {vendor: build(Dialect(vendor)) for vendor in ENGINES}


def on_this_engine(statement: dict[str, str]) -> str:
    return statement[_ops().connection.vendor]

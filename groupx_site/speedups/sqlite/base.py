"""Django's SQLite backend, whose cursor converts a statement's placeholders once per text and whose
datetime adapter takes a short way for the datetimes GroupX writes.

Django's SQLite cursor rewrites the ``%s`` placeholders of every statement it executes to ``?``
with a regular expression (``SQLiteCursorWrapper.convert_query``), ~5 µs for a statement of a few
hundred characters whether or not it holds any: ~0.15 ms of every Turn, which runs ~30 statements,
all of them the same few texts (the apps' fixed statements in their ``sql.py`` and the ORM's
queries, whose values are parameters). The conversion is a function of the text alone, so here
each text is converted once and remembered (a bounded LRU: an IN-list of a new length is a new
text). Every datetime a Turn writes (~14) is ``timezone.now()``: aware, in UTC, the connection's own
zone; Django's adapter checks and converts it through four calls and a settings read to arrive at
the same text that ``str`` of the naive value gives (~3.5 µs against ~1). A transaction's BEGIN and its
savepoints' statements run on the connection itself, not through a Django cursor (D72). Everything else is Django's
backend as it is; ``connection.vendor`` stays ``sqlite`` (docs/DECISIONS.md D64).
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache

from django.db.backends.sqlite3 import base, operations

from groupx_site.core.sqlite import functions
from groupx_site.speedups import switches

# The distinct texts a running server executes are a few hundred; the bound keeps a process that
# builds many (IN-lists of every length) from growing: at most ~1 MiB of statements.
CONVERTED_TEXTS = 1024


@lru_cache(maxsize=CONVERTED_TEXTS)
def format_to_qmark(query: str) -> str:
    """What Django's ``convert_query`` makes of a statement with positional parameters: its own
    code, called without a cursor, which that branch never reads (a Django that starts to would
    fail here loudly, and tests/unit/test_sqlite_backend.py with it)."""
    return base.SQLiteCursorWrapper.convert_query(None, query)


class SQLiteCursorWrapper(base.SQLiteCursorWrapper):
    def convert_query(self, query, *, param_names=None):
        if param_names is None:
            return format_to_qmark(query)
        return super().convert_query(query, param_names=param_names)


class DatabaseOperations(operations.DatabaseOperations):
    def adapt_datetimefield_value(self, value):
        # ``connection.timezone`` is UTC only when USE_TZ is on and the database names no zone: then
        # Django's make_naive of a UTC value is the value without its zone, and the text the same.
        if type(value) is datetime and value.tzinfo is UTC and self.connection.timezone is UTC:
            return str(value.replace(tzinfo=None))
        return super().adapt_datetimefield_value(value)


class PlainDatabaseWrapper(base.DatabaseWrapper):
    """Django's own backend, with only the SQL functions search needs (``sqliteShortcuts`` off)."""

    def get_new_connection(self, conn_params):
        connection = super().get_new_connection(conn_params)
        functions.register(connection)
        return connection


class ShortcutsDatabaseWrapper(PlainDatabaseWrapper):
    ops_class = DatabaseOperations

    def create_cursor(self, name=None):
        return self.connection.cursor(factory=SQLiteCursorWrapper)

    # A transaction's edges on the sqlite3 connection itself (docs/DECISIONS.md D72). Django runs
    # BEGIN and each savepoint's SAVEPOINT, RELEASE and ROLLBACK TO through a new cursor and its
    # three wrappers (~10 µs each in Python; a group of calls sharing a commit runs two per call,
    # group_commit.py). Here each is one ``execute`` of the connection inside Django's error
    # wrapping (``wrap_database_errors``: the same exceptions, so store faults are still
    # classified), after the checks Django's cursor makes first (the thread, a broken
    # transaction). While query capture or an execute wrapper watches the statements, Django's own
    # way runs, so they see every one.

    def _statements_watched(self) -> bool:
        return bool(self.execute_wrappers) or self.queries_logged

    def _edge(self, statement: str, djangos_way, *args) -> None:
        if self._statements_watched():
            djangos_way(*args)
            return
        self.validate_no_broken_transaction()
        with self.wrap_database_errors:
            self.connection.execute(statement)

    def _start_transaction_under_autocommit(self):
        if not self._statements_watched():
            self.validate_thread_sharing()  # savepoint(), savepoint_commit() and the rollback check it themselves
        self._edge(
            f"BEGIN {self.transaction_mode}" if self.transaction_mode else "BEGIN",
            super()._start_transaction_under_autocommit,
        )

    def _savepoint(self, sid):
        self._edge(f'SAVEPOINT "{sid}"', super()._savepoint, sid)

    def _savepoint_commit(self, sid):
        self._edge(f'RELEASE SAVEPOINT "{sid}"', super()._savepoint_commit, sid)

    def _savepoint_rollback(self, sid):
        self._edge(f'ROLLBACK TO SAVEPOINT "{sid}"', super()._savepoint_rollback, sid)


# What Django loads as this engine's ``DatabaseWrapper``: read once, when Django first opens the
# database (settings are loaded by then).
DatabaseWrapper = ShortcutsDatabaseWrapper if switches.is_on("sqliteShortcuts") else PlainDatabaseWrapper

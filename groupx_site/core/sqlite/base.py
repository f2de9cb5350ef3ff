"""Django's SQLite backend, whose cursor converts a statement's placeholders once per text.

Django's SQLite cursor rewrites the ``%s`` placeholders of every statement it executes to ``?``
with a regular expression (``SQLiteCursorWrapper.convert_query``), ~5 µs for a statement of a few
hundred characters whether or not it holds any: ~0.15 ms of every Turn, which runs ~30 statements,
all of them the same few texts (the apps' fixed statements in their ``sql.py`` and the ORM's
queries, whose values are parameters). The conversion is a function of the text alone, so here
each text is converted once and remembered (a bounded LRU: an IN-list of a new length is a new
text). Everything else is Django's backend as it is; ``connection.vendor`` stays ``sqlite``.
"""

from __future__ import annotations

from functools import lru_cache

from django.db.backends.sqlite3 import base

# The distinct texts a running server executes are a few hundred; the bound keeps a process that
# builds many (IN-lists of every length) from growing: at most ~1 MiB of statements.
CONVERTED_TEXTS = 1024


@lru_cache(maxsize=CONVERTED_TEXTS)
def format_to_qmark(query: str) -> str:
    """What Django's ``convert_query`` makes of a statement with positional parameters."""
    return base.SQLiteCursorWrapper.convert_query(None, query)


class SQLiteCursorWrapper(base.SQLiteCursorWrapper):
    def convert_query(self, query, *, param_names=None):
        if param_names is None:
            return format_to_qmark(query)
        return super().convert_query(query, param_names=param_names)


class DatabaseWrapper(base.DatabaseWrapper):
    def create_cursor(self, name=None):
        return self.connection.cursor(factory=SQLiteCursorWrapper)

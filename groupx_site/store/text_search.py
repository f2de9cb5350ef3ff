"""Text search over an FTS5 trigram index, with a LIKE fallback (docs/DECISIONS.md D15, D27).

Shared by memory search (memory/search.py) and room message search (rooms/history.py): every
whitespace-separated term must match. Terms of three or more characters go through the trigram
index, each quoted so FTS5 query syntax in what the user typed stays inert; shorter terms (which
a trigram index cannot serve), terms holding a NUL, and every term on a database without the
index, use LIKE. Rows an index filled in batches does not hold yet (room messages, D80) match their
indexed terms through a function that folds case as the index does. On PostgreSQL every term uses
LIKE (icontains), served by pg_trgm indexes (D53).
"""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.models import BooleanField, F, Func, Q, QuerySet, Value
from django.db.models.expressions import RawSQL

from groupx_site.core.sqlite import functions

TRIGRAM = 3


def text_filter(
    queryset: QuerySet[Any],
    fts_table: str,
    query: str | None,
    *,
    key: str = "id",
    content: str = "content",
    indexed_through_sql: str | None = None,
) -> QuerySet[Any]:
    """``queryset`` narrowed to rows matching every term of ``query``: ``key`` is the field that
    equals the index's rowid, ``content`` the lookup path of the searched text. An index filled in
    batches names, in ``indexed_through_sql``, the last key it holds: rows past it match their
    indexed terms as the index would (rooms/search_index.py)."""
    if not query:
        return queryset
    terms = query.split()
    # FTS5 reads a NUL as the end of the query text ("unterminated string"): such a term uses LIKE.
    indexed = [t for t in terms if len(t) >= TRIGRAM and "\x00" not in t] if connection.vendor == "sqlite" else []
    if indexed:
        match = " ".join('"' + term.replace('"', '""') + '"' for term in indexed)
        rowids = RawSQL(f"SELECT rowid FROM {fts_table} WHERE {fts_table} MATCH %s", [match])
        matches = Q(**{f"{key}__in": rowids})
        if indexed_through_sql is not None:
            # Folded as the trigram tokenizer folds (groupx_site/core/sqlite/functions.py), not as
            # LIKE does: the answer does not depend on whether a batch has taken the row yet.
            not_indexed_yet = Q(**{f"{key}__gt": RawSQL(indexed_through_sql, [])})
            for term in indexed:
                not_indexed_yet &= Q(
                    Func(F(content), Value(term), function=functions.FOLDED_CONTAINS, output_field=BooleanField())
                )
            matches |= not_indexed_yet
        queryset = queryset.filter(matches)
    for term in terms:
        if term not in indexed:
            queryset = queryset.filter(**{f"{content}__icontains": term})
    return queryset

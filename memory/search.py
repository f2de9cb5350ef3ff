"""Listing and searching memory and identity records: newest first, offset cursor (FEATURES §15).

Text search uses the FTS5 trigram indexes from migration 0002: every whitespace-separated term of
three or more characters must match (each term is quoted, so FTS5 query syntax in user input is
inert); shorter terms, and every term on a database without those indexes, fall back to LIKE.
"""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

from memory.inputs import ListQuery
from memory.models import IdentityRecord, MemoryRecord
from memory.records import identity_json, memory_json

TRIGRAM = 3


def text_filter(queryset: QuerySet, fts_table: str, query: str | None) -> QuerySet:
    if not query:
        return queryset
    terms = query.split()
    indexed = [t for t in terms if len(t) >= TRIGRAM] if connection.vendor == "sqlite" else []
    if indexed:
        match = " ".join('"' + term.replace('"', '""') + '"' for term in indexed)
        queryset = queryset.filter(id__in=RawSQL(f"SELECT rowid FROM {fts_table} WHERE {fts_table} MATCH %s", [match]))
    for term in terms:
        if term not in indexed:
            queryset = queryset.filter(content__icontains=term)
    return queryset


def _page(queryset: QuerySet, query: ListQuery, to_json) -> dict[str, Any]:
    rows = list(queryset.order_by("-id")[query.cursor:query.cursor + query.limit])
    page: dict[str, Any] = {"items": [to_json(row) for row in rows]}
    if len(rows) == query.limit:
        page["nextCursor"] = query.cursor + query.limit
    return page


def memory_queryset(query: ListQuery) -> QuerySet:
    records = MemoryRecord.objects.all()
    if not query.include_history:
        records = records.filter(status="active")
    for field, value in (
        ("scope_type", query.scope_type), ("scope_id", query.scope_id), ("agent_memory_type", query.agent_memory_type),
        ("kind", query.kind), ("author_actor_id", query.author_actor_id), ("subject_actor_id", query.subject_actor_id),
    ):
        if value is not None:
            records = records.filter(**{field: value})
    return text_filter(records, "memory_records_fts", query.query)


def list_memory(query: ListQuery) -> dict[str, Any]:
    return _page(memory_queryset(query), query, memory_json)


def list_identity(query: ListQuery) -> dict[str, Any]:
    records = IdentityRecord.objects.all()
    if not query.include_history:
        records = records.filter(status="active")
    for field, value in (("kind", query.kind), ("author_actor_id", query.author_actor_id),
                         ("subject_actor_id", query.subject_actor_id)):
        if value is not None:
            records = records.filter(**{field: value})
    return _page(text_filter(records, "identity_records_fts", query.query), query, identity_json)

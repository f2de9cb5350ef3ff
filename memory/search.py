"""Listing and searching memory and identity records: newest first, offset cursor (FEATURES §15).

Text search uses the FTS5 trigram indexes from migration 0002 through
``groupx_site/store/text_search.py`` (the room's message search uses the same rules).
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from groupx_site.store.text_search import text_filter
from memory.inputs import ListQuery
from memory.models import IdentityRecord, MemoryRecord
from memory.records import identity_json, memory_json


def _page(queryset: QuerySet, query: ListQuery, to_json) -> dict[str, Any]:
    rows = list(queryset.order_by("-id")[query.cursor : query.cursor + query.limit])
    page: dict[str, Any] = {"items": [to_json(row) for row in rows]}
    if len(rows) == query.limit:
        page["nextCursor"] = query.cursor + query.limit
    return page


def memory_queryset(query: ListQuery) -> QuerySet:
    records = MemoryRecord.objects.all()
    if not query.include_history:
        records = records.filter(status="active")
    for field, value in (
        ("scope_type", query.scope_type),
        ("scope_id", query.scope_id),
        ("agent_memory_type", query.agent_memory_type),
        ("kind", query.kind),
        ("author_actor_id", query.author_actor_id),
        ("subject_actor_id", query.subject_actor_id),
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
    for field, value in (
        ("kind", query.kind),
        ("author_actor_id", query.author_actor_id),
        ("subject_actor_id", query.subject_actor_id),
    ):
        if value is not None:
            records = records.filter(**{field: value})
    return _page(text_filter(records, "identity_records_fts", query.query), query, identity_json)

"""Room endpoints: thin wrappers over the read models (the post is ``turns/api.py``'s).

They are ``async``: their database work is one call on the writer or a reader thread
(``groupx_site.store.db``) instead of a fresh thread and connection per request."""

from __future__ import annotations

from django.http import HttpRequest, StreamingHttpResponse
from django.utils import timezone
from ninja import Query, Router

from groupx_site.core.contract import route
from groupx_site.core.json_response import json_response
from groupx_site.store import db
from rooms import export, history, sse
from rooms.schemas import (
    EventsPage,
    EventsPageQuery,
    EventsQuery,
    ExportQuery,
    SearchPage,
    SearchQuery,
)

router = Router(tags=["room"])


@router.get(
    "/events",
    summary="Server-Sent Events: durable events replayed from a cursor, then live",
    description="Each frame's `data` is an `Envelope`; `id` is its seq. `Last-Event-ID` resumes like "
    "`afterSeq` (both present must agree).",
    **route({200: None}, errors={400: ("INVALID_ENVELOPE",)}, media_type="text/event-stream"),
)
async def get_events(request: HttpRequest, query: Query[EventsQuery]):
    cursor = sse.parse_cursor(request.GET.get("afterSeq"), request.headers.get("Last-Event-ID"))
    response = StreamingHttpResponse(sse.event_stream(cursor), content_type="text/event-stream; charset=utf-8")
    response["Cache-Control"] = "no-cache, no-transform"
    response["X-Accel-Buffering"] = "no"
    return response


@router.get(
    "/events/page",
    summary="One page of older durable events by seq (scrolling back through history)",
    description="Up to `limit` (1–500, default 100) durable envelopes with seq < `beforeSeq` (the newest "
    "when absent), in seq order, as bootstrap and the stream deliver them. `previousPage."
    "beforeSeq` is the cursor of the next older page; it is absent at the start of the room.",
    **route({200: EventsPage}, errors={400: ("INVALID_ENVELOPE",)}),
)
async def get_events_page(request: HttpRequest, query: Query[EventsPageQuery]):
    return json_response(await db.read(history.page)(*query.checked))


@router.get(
    "/search",
    summary="Search the room's messages (every author), newest first",
    description="`message.created` whose content holds every word of `q` (case-insensitive substrings; "
    "FTS5 trigram index). Each item: seq, eventId, author, occurredAt, snippet. `limit` 1–500 "
    "(default 20); `nextPage.beforeSeq` continues with older matches.",
    **route({200: SearchPage}, errors={400: ("INVALID_ENVELOPE",)}),
)
async def get_search(request: HttpRequest, query: Query[SearchQuery]):
    return json_response(await db.read(history.search)(*query.checked))


@router.get(
    "/export.md",
    summary="Download the room's messages (or a time range) as Markdown",
    description="`from` and `to` are ISO 8601 (UTC when no zone is given); messages with from ≤ "
    "occurredAt < to, in seq order, streamed page by page.",
    **route({200: None}, errors={400: ("INVALID_ENVELOPE",)}, media_type="text/markdown"),
)
async def get_export(request: HttpRequest, query: Query[ExportQuery]):
    moments = query.checked
    now = timezone.now()
    response = StreamingHttpResponse(
        export.markdown_streamed(moments, now), content_type="text/markdown; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{export.filename(moments, now)}"'
    response["Cache-Control"] = "no-store"
    return response

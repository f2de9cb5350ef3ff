"""Room endpoints: thin wrappers over ``rooms.actions`` and the read models.

They are ``async``: their database work is one call on the writer or a reader thread
(``groupx_site.core.db``) instead of a fresh thread and connection per request."""

from __future__ import annotations

from django.http import HttpRequest, StreamingHttpResponse
from django.utils import timezone
from ninja import Query, Router

from groupx_site.core import db
from groupx_site.core.http import json_body
from groupx_site.core.json_response import json_response
from rooms import actions, export, history, sse

router = Router(tags=["room"])


@router.post("/messages", response={202: dict}, summary="Post a user message and queue one Turn per target")
async def post_message(request: HttpRequest):
    return 202, await db.write(actions.post_message)(json_body(request))


@router.get("/events", summary="Server-Sent Events: durable events replayed from a cursor, then live")
async def get_events(request: HttpRequest, afterSeq: str | None = None):  # noqa: N803 (wire name)
    cursor = sse.parse_cursor(request.GET.get("afterSeq"), request.headers.get("Last-Event-ID"))
    response = StreamingHttpResponse(sse.event_stream(cursor), content_type="text/event-stream; charset=utf-8")
    response["Cache-Control"] = "no-cache, no-transform"
    response["X-Accel-Buffering"] = "no"
    return response


@router.get("/events/page", summary="One page of older durable events by seq (scrolling back through history)",
            description="Up to `limit` (1–500, default 100) durable envelopes with seq < `beforeSeq` (the newest "
                        "when absent), in seq order, as bootstrap and the stream deliver them. `previousPage."
                        "beforeSeq` is the cursor of the next older page; it is absent at the start of the room.")
async def get_events_page(request: HttpRequest, beforeSeq: str | None = None, limit: str | None = None):  # noqa: N803
    return json_response(await db.read(history.read_page)(beforeSeq, limit))


@router.get("/search", summary="Search the room's messages (every author), newest first",
            description="`message.created` whose content holds every word of `q` (case-insensitive substrings; "
                        "FTS5 trigram index). Each item: seq, eventId, author, occurredAt, snippet. `limit` 1–500 "
                        "(default 20); `nextPage.beforeSeq` continues with older matches.")
async def get_search(request: HttpRequest, q: str | None = None, beforeSeq: str | None = None,  # noqa: N803
                     limit: str | None = None):
    return json_response(await db.read(history.read_search)(q, beforeSeq, limit))


@router.get("/export.md", summary="Download the room's messages (or a time range) as Markdown",
            description="`from` and `to` are ISO 8601 (UTC when no zone is given); messages with from ≤ "
                        "occurredAt < to, in seq order, streamed page by page.")
async def get_export(request: HttpRequest, start: str | None = Query(None, alias="from"),
                     end: str | None = Query(None, alias="to")):
    moments = export.parse_range(start, end)
    now = timezone.now()
    response = StreamingHttpResponse(export.markdown_streamed(moments, now), content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{export.filename(moments, now)}"'
    response["Cache-Control"] = "no-store"
    return response

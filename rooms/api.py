"""Room endpoints: thin wrappers over ``rooms.actions`` and the read models.

They are ``async``: their database work is one call on the writer or a reader thread
(``groupx_site.db``) instead of a fresh thread and connection per request."""

from __future__ import annotations

from django.http import HttpRequest, StreamingHttpResponse
from ninja import Router

from groupx_site import db
from groupx_site.json_response import json_response
from groupx_site.middleware import json_body
from rooms import actions, bootstrap, sse

router = Router(tags=["room"])


@router.post("/messages", response={202: dict}, summary="Post a user message and queue one Turn per target")
async def post_message(request: HttpRequest):
    return 202, await db.write(actions.post_message)(json_body(request))


@router.get("/bootstrap", summary="The room snapshot and the cursor to stream from")
async def get_bootstrap(request: HttpRequest):
    return json_response(await db.read(bootstrap.bootstrap)())


@router.get("/events", summary="Server-Sent Events: durable events replayed from a cursor, then live")
async def get_events(request: HttpRequest, afterSeq: str | None = None):  # noqa: N803 (wire name)
    cursor = sse.parse_cursor(request.GET.get("afterSeq"), request.headers.get("Last-Event-ID"))
    response = StreamingHttpResponse(sse.event_stream(cursor), content_type="text/event-stream; charset=utf-8")
    response["Cache-Control"] = "no-cache, no-transform"
    response["X-Accel-Buffering"] = "no"
    return response

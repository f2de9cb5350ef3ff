"""``GET /api/events``: the durable log as Server-Sent Events (PROTOCOL §11, FEATURES §9).

The stream subscribes to the bus *before* its first read, then repeatedly reads ``seq > cursor``
from the table in pages; the bus only says "read again". So there is no window between replay and
live, durable events go out in seq order exactly once, and a slow client can lose transient deltas
but never a durable event. A 2 s poll also picks up rows written by other processes (management
commands). A cursor beyond the head is answered with a visible ``stream.reset`` frame.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db.models import Max

from groupx_site.errors import invalid
from rooms import bus
from rooms.events import ENVELOPE_FIELDS, SYSTEM, envelope_from_row, iso
from rooms.models import ROOM_ID, SCHEMA, Event

PAGE = 500
HEARTBEAT_SECONDS = 15.0
POLL_SECONDS = 2.0
DECIMAL = re.compile(r"^[0-9]{1,18}$")


def parse_cursor(after_seq: str | None, last_event_id: str | None) -> int:
    """One cursor from the query and/or the header; both present must agree (Decisions 1)."""
    values = []
    for name, raw in (("afterSeq", after_seq), ("Last-Event-ID", last_event_id)):
        if raw is None:
            continue
        if not DECIMAL.match(raw.strip()):
            raise invalid(f"{name} must be a non-negative decimal integer")
        values.append(int(raw.strip()))
    if len(values) == 2 and values[0] != values[1]:
        raise invalid("afterSeq and Last-Event-ID disagree; send one cursor", afterSeq=values[0], lastEventId=values[1])
    return values[0] if values else 0


def read_page(cursor: int) -> list[dict[str, Any]]:
    rows = Event.objects.filter(seq__gt=cursor).order_by("seq").values(*ENVELOPE_FIELDS)[:PAGE]
    return [envelope_from_row(row) for row in rows]


def head_seq() -> int:
    return Event.objects.aggregate(head=Max("seq"))["head"] or 0


_read_page = sync_to_async(read_page, thread_sensitive=False)
_head_seq = sync_to_async(head_seq, thread_sensitive=False)


def durable_frame(envelope: dict[str, Any]) -> str:
    return f"id: {envelope['seq']}\ndata: {json.dumps(envelope, ensure_ascii=False, separators=(',', ':'))}\n\n"


def transient_frame(envelope: dict[str, Any]) -> str:
    return f"data: {json.dumps(envelope, ensure_ascii=False, separators=(',', ':'))}\n\n"


def reset_frame(cursor: int, head: int) -> str:
    from django.utils import timezone

    from rooms.ids import event_id

    envelope = {
        "schema": SCHEMA, "eventId": event_id(), "seq": None, "roomId": ROOM_ID, "type": "stream.reset",
        "actor": SYSTEM.as_json(), "to": [], "correlationId": "stream", "rootCorrelationId": "stream",
        "occurredAt": iso(timezone.now()), "durability": "transient",
        "body": {"reason": "cursor_beyond_head", "cursor": cursor, "headSeq": head},
    }
    return transient_frame(envelope)


async def event_stream(cursor: int) -> AsyncIterator[str]:
    limits = settings.GROUPX_CONFIG.limits
    listener = bus.subscribe(max_frames=limits.sseEvents, max_bytes=limits.sseBytes)
    loop = asyncio.get_running_loop()
    try:
        yield "retry: 2000\n: open\n\n"
        head = await _head_seq()
        if cursor > head:
            # The client knows seqs this database never had (a reset store): say so, then
            # continue from the real head so nothing new is hidden behind the stale cursor.
            yield reset_frame(cursor, head)
            cursor = head
        last_sent = loop.time()
        need_read = True
        while True:
            if need_read:
                listener.durable_pending = False
                while True:
                    page = await _read_page(cursor)
                    if page:
                        yield "".join(durable_frame(e) for e in page)
                        cursor, last_sent = page[-1]["seq"], loop.time()
                    if len(page) < PAGE:
                        break
            transients = listener.take_transients()
            if transients:
                yield "".join(transient_frame(e) for e in transients)
                last_sent = loop.time()
            if listener.durable_pending:
                need_read = True
                continue
            listener.signal.clear()
            try:
                await asyncio.wait_for(listener.signal.wait(), timeout=POLL_SECONDS)
                need_read = listener.durable_pending
            except TimeoutError:
                need_read = True  # poll: rows written by another process wake no bus
                if loop.time() - last_sent >= HEARTBEAT_SECONDS:
                    yield ": heartbeat\n\n"
                    last_sent = loop.time()
    finally:
        bus.unsubscribe(listener)

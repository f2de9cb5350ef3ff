"""``GET /api/events``: the durable log as Server-Sent Events (PROTOCOL §11, FEATURES §9).

A stream joins its loop's shared tail (``rooms/tail.py``) *before* its first read, then sends
``seq > cursor``: from the tail's window of the newest frames, or in pages straight from the table
while it catches up. So there is no window between replay and live, durable events go out in seq
order exactly once, and a slow client can lose transient deltas but never a durable event; a
client that stops reading pauses its stream (``groupx_site/backpressure.py``). A cursor beyond the head is
answered with a visible ``stream.reset`` frame.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

from django.conf import settings
from django.utils import timezone

from groupx_site.core.errors import invalid
from groupx_site.core.ids import event_id
from rooms.events import SYSTEM, iso
from rooms.models import ROOM_ID, SCHEMA
from rooms.tail import Inbox, Tail, read_head_seq, tail_for, transient_frame

DECIMAL = re.compile(r"^[0-9]{1,18}$")
HEARTBEAT = b": heartbeat\n\n"


def parse_cursor(after_seq: str | None, last_event_id: str | None) -> int:
    """One cursor from the query and/or the header; both present must agree, else 400."""
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


def reset_frame(cursor: int, head: int) -> str:
    envelope = {
        "schema": SCHEMA,
        "eventId": event_id(),
        "seq": None,
        "roomId": ROOM_ID,
        "type": "stream.reset",
        "actor": SYSTEM.as_json(),
        "to": [],
        "correlationId": "stream",
        "rootCorrelationId": "stream",
        "occurredAt": iso(timezone.now()),
        "durability": "transient",
        "body": {"reason": "cursor_beyond_head", "cursor": cursor, "headSeq": head},
    }
    return transient_frame(envelope)


async def _next_durable(tail: Tail, inbox: Inbox, cursor: int) -> tuple[bytes, int, bool]:
    """``(frames after cursor, new cursor, read again)``: from the shared tail when the cursor is
    inside its window (the tail's own schedule keeps it fresh), else one page of the table (a
    stream catching up)."""
    if cursor >= tail.floor:
        return tail.after(cursor)
    chunk, cursor, full, fresh = await tail.page(cursor, inbox)
    return chunk, cursor, full or not fresh


async def event_stream(cursor: int) -> AsyncIterator[str | bytes]:
    limits = settings.GROUPX_CONFIG.limits
    loop = asyncio.get_running_loop()
    inbox = Inbox(loop, max_frames=limits.sseEvents, max_bytes=limits.sseBytes)
    tail: Tail | None = None
    try:
        yield "retry: 2000\n: open\n\n"
        head = await read_head_seq()
        if cursor > head:
            # The client knows seqs this database never had (a reset store): say so, then
            # continue from the real head so nothing new is hidden behind the stale cursor.
            yield reset_frame(cursor, head)
            cursor = head
        tail = tail_for(loop, head)
        tail.join(inbox)  # before the first read: every later commit reaches this stream
        if cursor >= tail.floor:
            await tail.refresh()  # the tail may be older than this stream's first read
        need_read = True
        while True:
            # What one wake-up has for the client goes out as one body chunk: one send through
            # the server and one socket write, not one per kind (docs/DECISIONS.md D65).
            batch: list[bytes] = []
            if need_read:
                inbox.durable_pending = False
                more = True
                while more:
                    chunk, cursor, more = await _next_durable(tail, inbox, cursor)
                    if chunk and more:
                        # Catching up in pages: each goes out as it is read, none held for the next.
                        yield chunk
                        inbox.last_sent = loop.time()
                    elif chunk:
                        batch.append(chunk)
                # A generator's locals live while it waits: an idle stream must not pin its last
                # page (up to 500 encoded frames; 50 streams held ~13 MiB this way).
                chunk = b""
            if inbox.transients:
                batch.append(tail.transient_bytes(inbox.take_transients()))
            if inbox.heartbeat_due:
                inbox.heartbeat_due = False
                batch.append(HEARTBEAT)
            if batch:
                yield batch[0] if len(batch) == 1 else b"".join(batch)
                inbox.last_sent = loop.time()
                batch = []
            # Each yield let the tail run: look again before parking (nothing may run between
            # this check and the park, or a broadcast's wake would be lost until the next one).
            need_read = inbox.durable_pending
            if need_read or inbox.transients:
                continue
            inbox.signal.clear()
            inbox.waiting = True
            tail.parked(inbox)  # may start the next broadcast, which may wake this stream at once
            try:
                await inbox.signal.wait()
            finally:
                inbox.waiting = False
            need_read = inbox.durable_pending
    finally:
        if tail is not None:
            tail.leave(inbox)

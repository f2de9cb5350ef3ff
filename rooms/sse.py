"""``GET /api/events``: the durable log as Server-Sent Events (PROTOCOL §11, FEATURES §9).

The stream subscribes to the bus *before* its first read, then repeatedly reads ``seq > cursor``
from the table in pages; the bus only says "read again". So there is no window between replay and
live, durable events go out in seq order exactly once, and a slow client can lose transient deltas
but never a durable event. A 2 s poll also picks up rows written by other processes (management
commands). A cursor beyond the head is answered with a visible ``stream.reset`` frame.

Streams at the head share one ``_Tail`` per event loop: a wake-up makes one read of the new rows,
encoded once, instead of one query and one JSON encoding per connection (bench/, docs/PERFORMANCE.md).
A stream behind the tail's window reads its own pages, exactly as before.
"""

from __future__ import annotations

import asyncio
import bisect
import json
import re
import weakref
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


TAIL_FRAMES = 2 * PAGE
TAIL_BYTES = 4 * 1024 * 1024


def read_page(cursor: int) -> list[dict[str, Any]]:
    rows = Event.objects.filter(seq__gt=cursor).order_by("seq").values(*ENVELOPE_FIELDS)[:PAGE]
    return [envelope_from_row(row) for row in rows]


def read_frames(cursor: int) -> list[tuple[int, bytes]]:
    """One page as ``(seq, frame bytes)``, encoded in the worker thread rather than on the loop.
    Bytes, so that every stream writes the same object: no per-connection encoding or copy."""
    return [(envelope["seq"], durable_frame(envelope).encode()) for envelope in read_page(cursor)]


def head_seq() -> int:
    return Event.objects.aggregate(head=Max("seq"))["head"] or 0


_read_frames = sync_to_async(read_frames, thread_sensitive=False)
_head_seq = sync_to_async(head_seq, thread_sensitive=False)


def durable_frame(envelope: dict[str, Any]) -> str:
    return f"id: {envelope['seq']}\ndata: {json.dumps(envelope, ensure_ascii=False, separators=(',', ':'))}\n\n"


class _Tail:
    """The newest durable frames of the table, shared by the streams of one event loop.

    It holds every row with ``floor < seq <= top`` (bounded; the oldest frames are dropped, which
    raises ``floor``). ``refresh()`` returns once a read of the table that *started after the call*
    has finished, so a stream woken by a commit always sees that commit, and concurrent wake-ups
    share one read. Rows are read in seq order from the table, like a stream's own pages.
    """

    def __init__(self, head: int):
        self.floor = self.top = head
        self.seqs: list[int] = []
        self.frames: list[bytes] = []
        self.size = 0
        self._asked = 0  # refresh() calls so far
        self._served = 0  # every call numbered up to this saw a read that started after it
        self._reading: asyncio.Future | None = None

    async def refresh(self) -> None:
        self._asked += 1
        ticket = self._asked
        while self._served < ticket:
            if self._reading is None:
                # this read starts after every call numbered up to _asked: it serves them all
                self._reading = asyncio.ensure_future(self._read(self._asked))
            await asyncio.shield(self._reading)

    async def _read(self, serves: int) -> None:
        try:
            while True:
                page = await _read_frames(self.top)
                for seq, frame in page:
                    self.seqs.append(seq)
                    self.frames.append(frame)
                    self.size += len(frame)
                if page:
                    self.top = page[-1][0]
                if len(page) < PAGE:
                    break
            self._trim()
            self._served = max(self._served, serves)
        finally:
            self._reading = None

    def _trim(self) -> None:
        drop = 0
        while drop < len(self.seqs) and (len(self.seqs) - drop > TAIL_FRAMES or self.size > TAIL_BYTES):
            self.size -= len(self.frames[drop])
            drop += 1
        if drop:
            self.floor = self.seqs[drop - 1]
            del self.seqs[:drop], self.frames[:drop]

    def after(self, cursor: int) -> tuple[bytes, int]:
        """The frames after ``cursor`` (which must be ``>= floor``) and the new cursor."""
        start = bisect.bisect_right(self.seqs, cursor)
        if start == len(self.seqs):
            return b"", cursor
        return b"".join(self.frames[start:]), self.seqs[-1]  # one frame: the shared object itself


_tails: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Tail] = weakref.WeakKeyDictionary()


def _tail(loop: asyncio.AbstractEventLoop, head: int) -> _Tail:
    tail = _tails.get(loop)
    if tail is None:
        tail = _tails[loop] = _Tail(head)
    return tail


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


async def _next_durable(tail: _Tail, cursor: int) -> tuple[bytes, int, bool]:
    """``(frames after cursor, new cursor, read again)``: from the shared tail after a fresh read
    when the cursor is inside its window, else one page of the table (a stream catching up)."""
    if cursor >= tail.floor:
        await tail.refresh()
        if cursor >= tail.floor:  # still inside the window after the read
            chunk, cursor = tail.after(cursor)
            return chunk, cursor, False
    page = await _read_frames(cursor)
    if not page:
        return b"", cursor, False
    return b"".join(frame for _, frame in page), page[-1][0], len(page) == PAGE


async def event_stream(cursor: int) -> AsyncIterator[str | bytes]:
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
        tail = _tail(loop, head)
        last_sent = loop.time()
        need_read = True
        while True:
            if need_read:
                listener.durable_pending = False
                more = True
                while more:
                    chunk, cursor, more = await _next_durable(tail, cursor)
                    if chunk:
                        yield chunk
                        last_sent = loop.time()
                # A generator's locals live while it waits: an idle stream must not pin its last
                # page (up to 500 encoded frames; 50 streams held ~13 MiB this way).
                chunk = b""
            if listener.transients:
                yield "".join(transient_frame(e) for e in listener.take_transients())
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

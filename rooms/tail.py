"""The shared tail of ``GET /api/events`` (rooms/sse.py): the newest durable frames of the table
and the wake-up schedule of one event loop's streams (docs/DECISIONS.md D22).

Streams at the head share one ``Tail`` per event loop: a commit makes one read of the new rows (or
hands its frames over, ``_committed``), encoded once, instead of one query and one JSON encoding
per connection; broadcasts to the streams are paced, so fan-out takes a bounded share of the CPU
however fast commits arrive. A stream behind the tail's window reads its own pages
(``Tail.page``), shared with streams at the same cursor.
"""

from __future__ import annotations

import asyncio
import bisect
import time
import weakref
from typing import Any

from django.db.models import Max

from groupx_site.core.text import json_text
from groupx_site.store import db
from rooms import bus
from rooms.events import ENVELOPE_FIELDS, durable_frame, envelope_from_row
from rooms.models import Event

PAGE = 500
HEARTBEAT_SECONDS = 15.0
POLL_SECONDS = 2.0


TAIL_FRAMES = 2 * PAGE
TAIL_BYTES = 4 * 1024 * 1024
CHUNK_BYTES = 64 * 1024  # the most a stream takes from the tail in one go (one Django chunk)
# A stream catching up below the tail holds its page while a slow client drains it: 50 streams
# replaying from seq 0 held ~25 MiB with pages of 500 (PROTOCOL §11 allows any page up to 500).
CATCH_UP_PAGE = 100


def read_page(cursor: int, limit: int = PAGE) -> list[dict[str, Any]]:
    rows = Event.objects.filter(seq__gt=cursor).order_by("seq").values(*ENVELOPE_FIELDS)[:limit]
    return [envelope_from_row(row) for row in rows]


def read_frames(cursor: int, limit: int = PAGE) -> list[tuple[int, bytes]]:
    """One page as ``(seq, frame bytes)``, encoded in the worker thread rather than on the loop.
    Bytes, so that every stream writes the same object: no per-connection encoding or copy."""
    return [(envelope["seq"], durable_frame(envelope).encode()) for envelope in read_page(cursor, limit)]


def head_seq() -> int:
    return Event.objects.aggregate(head=Max("seq"))["head"] or 0


_read_frames = db.read(read_frames)
read_head_seq = db.read(head_seq)


class Inbox(bus.Listener):
    """One stream's inbox. It is not a bus member itself: the loop's ``Tail`` is, and it fills
    the inboxes of its streams and wakes them on its own schedule."""

    def __init__(self, loop: asyncio.AbstractEventLoop, *, max_frames: int, max_bytes: int):
        super().__init__(loop, max_frames=max_frames, max_bytes=max_bytes)
        self.waiting = False  # parked in ``signal.wait()`` with nothing left to send
        self.ticket = 0  # the tail's join count when this stream joined
        self.heartbeat_due = False
        self.last_sent = loop.time()


# Pacing (see ``Tail``): after a broadcast that cost the loop ``d`` seconds of CPU, the next one
# starts no sooner than ``PACE * d`` later, so waking streams uses at most 1 / (1 + PACE) of the
# loop's CPU (20 %) however fast commits or deltas arrive; and no later than ``MAX_GAP`` after the
# previous broadcast began, which bounds what pacing adds to any event's delivery.
PACE = 4.0
MAX_GAP = 0.040
# The loop runs other work between a broadcast's wakes (lanes, requests, agent output), which the
# CPU clock also counts; a stream's own share is ~75 µs here, so the cost is capped at this much
# per woken stream, or a lone stream would wait for work that is not fan-out at all.
STREAM_COST_CAP = 0.000_250
# A broadcast that woke at most this many streams sets no pace: pacing bounds the CPU of waking
# many streams; one stream's wake is its own frames' write, and holding it only delays them.
UNPACED_STREAMS = 1


class Tail:
    """The newest durable frames of the table and the wake-up schedule of one event loop's streams.

    It holds every row with ``floor < seq <= top`` (bounded; the oldest frames are dropped, which
    raises ``floor``). Rows are read in seq order from the table, like a stream's own pages.

    The tail, not each stream, is the bus member: a commit asks it for one read; after the read it
    *broadcasts*: every stream's inbox is marked "read the tail again" and every stream with
    something to send is woken. Transient deltas are queued in each inbox as they arrive and go
    out with the next broadcast (one with no read when nothing was committed).

    Broadcasts are paced. Each costs about ``streams x c`` (resuming a generator, Django's
    streaming response, daphne's write), so broadcasting every commit made 50 streams cost the
    server nearly as much CPU as the turns themselves. The cost ``d`` of a broadcast is measured
    as the loop thread's CPU time from the first wake until the last woken stream is parked again
    (CPU, not wall time: waiting for the GIL while the database thread works is not fan-out cost,
    and a lone stream must not be slowed by it), capped per woken stream (``STREAM_COST_CAP``).
    The next broadcast starts no sooner than ``PACE * d`` after that and no later than ``MAX_GAP``
    after the previous one began; meanwhile commits and deltas accumulate and go out together (a
    woken stream that never parks, e.g. on a blocked send, does not hold the others back beyond
    ``MAX_GAP``). A broadcast that woke one stream sets no pace (``UNPACED_STREAMS``): a lone
    stream, a browser's or a harness's, gets each commit and delta at once; 50 streams (d ~4 ms) at
    most one broadcast every ~20 ms. Pacing changes only *when* a
    stream reads the tail, never what it reads: durable events still go out in seq order exactly
    once, each at most ``MAX_GAP`` plus two table reads after its commit. Deltas share the
    schedule because they cost the same per stream (an agent streaming tokens would otherwise
    wake every stream per token); a browser batches them per 32 ms anyway.

    A stream's first read waits for a fresh read (``refresh()``: one that started after the call),
    so it sees rows written before it joined, by this process or another. Every ``POLL_SECONDS``
    without a read the tail reads anyway (rows from other processes wake no bus), and streams
    silent for ``HEARTBEAT_SECONDS`` are woken to send a heartbeat.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, head: int):
        self.loop = loop
        self.floor = self.top = head
        self.seqs: list[int] = []
        self.frames: list[bytes] = []
        self.size = 0
        self.inboxes: set[Inbox] = set()
        self._read_wanted = False  # a commit (or a refresh()) since the last read started
        self._flush_wanted = False  # transients queued since the last broadcast
        self._refreshes: list[asyncio.Future] = []  # refresh() calls the next read will serve
        self._reading: asyncio.Task | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._poll: asyncio.TimerHandle | None = None
        self._last_read = loop.time()
        self._next_at = 0.0  # loop time before which no broadcast starts
        self._began = 0.0  # loop time the last broadcast began
        self._began_cpu = 0.0
        self._busy: set[Inbox] = set()  # woken by the last broadcast, not parked again yet
        self._woken = 0  # how many streams the last broadcast woke
        self._told_top = head  # the top the last broadcast told the streams about
        self._joins = 0
        # page reads below the window in flight, by cursor, with the join count when each began
        self._pages: dict[int, tuple[asyncio.Task, int]] = {}
        # transient frames encoded once, by id(envelope): offered since the current broadcast
        # began, and those that broadcast delivers (dropped when it ends; a late stream re-encodes)
        self._offered: dict[int, tuple[dict[str, Any], bytes]] = {}
        self._delivering: dict[int, tuple[dict[str, Any], bytes]] = {}

    # -- membership (streams) and the bus (commits, deltas) ---------------------------------

    def join(self, inbox: Inbox) -> None:
        self._joins += 1
        inbox.ticket = self._joins
        if not self.inboxes:
            bus.join(self)
            self._poll = self.loop.call_later(POLL_SECONDS, self._on_poll)
        self.inboxes.add(inbox)

    def leave(self, inbox: Inbox) -> None:
        self.inboxes.discard(inbox)
        self.parked(inbox)
        if not self.inboxes:
            bus.leave(self)
            self._offered, self._delivering = {}, {}
            if self._poll is not None:
                self._poll.cancel()
                self._poll = None

    def _wake_durable(self) -> None:
        self._read_wanted = True
        self._schedule()

    def _committed(self, frames: list[tuple[int, bytes | None]]) -> None:
        """Committed events with their frames, from their writer in commit order. When they
        continue exactly from ``top`` (the usual case: one writer thread, ``groupx_site/store/db.py``)
        they join the window as they are, and the broadcast needs no read of the table. Anything
        else (a gap left by another thread's or process's commit, a read in flight, a frame not
        encoded) is a plain wake-up: the table decides."""
        fresh = [(seq, frame) for seq, frame in frames if seq > self.top]
        if not fresh:
            return  # already read from the table
        contiguous = all(seq == self.top + 1 + i and frame is not None for i, (seq, frame) in enumerate(fresh))
        if not contiguous or self._reading is not None or self._read_wanted:
            self._wake_durable()
            return
        for seq, frame in fresh:
            self.seqs.append(seq)
            self.frames.append(frame)
            self.size += len(frame)
        self.top = fresh[-1][0]
        self._trim()
        self._flush_wanted = True
        self._schedule()

    def _offer_transient(self, envelope: dict[str, Any], text: str) -> None:
        # framed once here from the bus's encoding, not by each stream (the inboxes share the envelope)
        self._offered[id(envelope)] = (envelope, frame_of(text).encode())
        for inbox in self.inboxes:
            inbox.offer(envelope, len(text))
        self._flush_wanted = True
        self._schedule()

    def transient_bytes(self, envelopes: list[dict[str, Any]]) -> bytes:
        """The frames of a stream's transients: the shared encoding, unless the inbox merged some."""
        frames = []
        for envelope in envelopes:
            known = self._offered.get(id(envelope)) or self._delivering.get(id(envelope))
            frames.append(known[1] if known and known[0] is envelope else transient_frame(envelope).encode())
        return b"".join(frames)

    async def refresh(self) -> None:
        """Return once a read of the table that started after this call has finished."""
        served = self.loop.create_future()
        self._refreshes.append(served)
        self._read_wanted = True
        self._schedule()
        await served

    def parked(self, inbox: Inbox) -> None:
        """The stream has sent what it had and waits again (or has gone)."""
        if inbox in self._busy:
            self._busy.discard(inbox)
            if not self._busy:
                self._end_broadcast()

    # -- the schedule ------------------------------------------------------------------------

    def _schedule(self) -> None:
        if self._reading is not None or self._timer is not None or not self.inboxes:
            return
        if not (self._read_wanted or self._flush_wanted):
            return
        if self._next_at <= self.loop.time():
            self._start()
        else:
            self._timer = self.loop.call_at(self._next_at, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._schedule()

    def _start(self) -> None:
        if self._read_wanted:
            self._read_wanted = False
            refreshes, self._refreshes = self._refreshes, []
            self._last_read = self.loop.time()
            self._reading = self.loop.create_task(self._read(refreshes))
        else:
            self._broadcast(new_rows=self.top != self._told_top)  # rows handed over by ``_committed``

    async def _read(self, refreshes: list[asyncio.Future]) -> None:
        failed: BaseException | None = None
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
        except BaseException as error:  # a failed read is retried at the next poll
            failed = error
            self._read_wanted = True
            self._next_at = self.loop.time() + POLL_SECONDS
            if not isinstance(error, Exception):
                raise  # cancelled: the runtime stops
        finally:
            self._reading = None
            for served in refreshes:  # the streams that waited for this read see its outcome
                if served.done():
                    continue
                if failed is None:
                    served.set_result(None)
                elif isinstance(failed, Exception):
                    served.set_exception(failed)
                else:
                    served.cancel()
        if failed is None:
            self._broadcast(new_rows=self.top != self._told_top)  # also rows a failed read kept
        else:
            self._schedule()

    def _broadcast(self, *, new_rows: bool) -> None:
        self._flush_wanted = False
        self._told_top = self.top
        self._delivering, self._offered = self._offered, {}
        self._began = self.loop.time()
        # The CPU clock is a system call: read only where a pace may follow (several streams).
        self._began_cpu = time.thread_time() if len(self.inboxes) > UNPACED_STREAMS else 0.0
        self._next_at = self._began + MAX_GAP  # until the broadcast ends and its cost is known
        self._busy = set()
        for inbox in self.inboxes:
            if new_rows:
                inbox.durable_pending = True
            if inbox.durable_pending or inbox.transients:
                inbox.signal.set()
                if inbox.waiting:
                    self._busy.add(inbox)
        self._woken = len(self._busy)
        if not self._busy:
            self._end_broadcast()

    def _end_broadcast(self) -> None:
        self._delivering = {}
        if self._woken <= UNPACED_STREAMS:
            # Waking one stream is a write, not a fan-out: the next commit or delta goes out at once
            # (a lone Turn's reply waited up to 4 x 250 µs behind its own deltas' broadcast, D75).
            self._next_at = self.loop.time()
        else:
            cost = min(time.thread_time() - self._began_cpu, self._woken * STREAM_COST_CAP)
            self._next_at = min(self.loop.time() + PACE * cost, self._began + MAX_GAP)
        if self._timer is not None:  # it was set for the provisional bound
            self._timer.cancel()
            self._timer = None
        self._schedule()

    def _on_poll(self) -> None:
        now = self.loop.time()
        if now - self._last_read >= POLL_SECONDS:
            self._read_wanted = True  # a notice the channel layer lost (D43), or a process on no layer
        for inbox in self.inboxes:
            if inbox.waiting and now - inbox.last_sent >= HEARTBEAT_SECONDS:
                inbox.heartbeat_due = True
                inbox.signal.set()
        self._poll = self.loop.call_later(POLL_SECONDS, self._on_poll)
        self._schedule()

    # -- the frames --------------------------------------------------------------------------

    async def page(self, cursor: int, inbox: Inbox) -> tuple[bytes, int, bool, bool]:
        """One page of the table after ``cursor`` (below the window):
        ``(frames, new cursor, full, fresh)``.

        Streams asking for the same cursor while its read is in flight share it (50 clients
        replaying from seq 0 at once made 50 identical reads and encodings). A shared read that
        began before this stream joined is not *fresh*: it may miss rows committed just before
        the join, whose broadcast this stream never got, so the caller must read once more (the
        tail, or a page that began after this call, hence after the join) before parking.
        """
        reading = self._pages.get(cursor)
        if reading is None:
            reading = self._pages[cursor] = (self.loop.create_task(self._read_page(cursor)), self._joins)
        task, began = reading
        result = await asyncio.shield(task)  # one stream going away must not cancel the others' read
        return (*result, began >= inbox.ticket)

    async def _read_page(self, cursor: int) -> tuple[bytes, int, bool]:
        try:
            page = await _read_frames(cursor, CATCH_UP_PAGE)
        finally:
            del self._pages[cursor]
        if not page:
            return b"", cursor, False
        return b"".join(frame for _, frame in page), page[-1][0], len(page) == CATCH_UP_PAGE

    def _trim(self) -> None:
        drop = 0
        while drop < len(self.seqs) and (len(self.seqs) - drop > TAIL_FRAMES or self.size > TAIL_BYTES):
            self.size -= len(self.frames[drop])
            drop += 1
        if drop:
            self.floor = self.seqs[drop - 1]
            del self.seqs[:drop], self.frames[:drop]

    def after(self, cursor: int) -> tuple[bytes, int, bool]:
        """The frames after ``cursor`` (which must be ``>= floor``), at most ~``CHUNK_BYTES`` of
        them: ``(frames, new cursor, more left)``. Bounded because each stream holds its own
        joined copy while a slow client drains it (``groupx_site/backpressure.py``)."""
        start = bisect.bisect_right(self.seqs, cursor)
        end, size = start, 0
        while end < len(self.seqs) and (end == start or size + len(self.frames[end]) <= CHUNK_BYTES):
            size += len(self.frames[end])
            end += 1
        if end == start:
            return b"", cursor, False
        chunk = self.frames[start] if end == start + 1 else b"".join(self.frames[start:end])  # one: shared as is
        return chunk, self.seqs[end - 1], end < len(self.seqs)


_tails: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Tail] = weakref.WeakKeyDictionary()


def tail_for(loop: asyncio.AbstractEventLoop, head: int) -> Tail:
    tail = _tails.get(loop)
    if tail is None:
        tail = _tails[loop] = Tail(loop, head)
    return tail


def transient_frame(envelope: dict[str, Any]) -> str:
    return frame_of(json_text(envelope))


def frame_of(text: str) -> str:
    """The SSE frame of a transient envelope already encoded (``json_text``)."""
    return f"data: {text}\n\n"

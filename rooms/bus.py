"""The in-process notification bus between writers and SSE streams.

The table stays the truth for durable events: the bus says "read again", and hands over the
committed frames only as a shortcut that a member may use when they continue exactly where it
stands (the SSE tail does, rooms/tail.py); so a lost or coalesced hand-off can delay a durable event
but never drop it. Transient deltas travel through it whole and may be merged or dropped for a slow
reader (PROTOCOL §11).

Writers call ``committed`` from ``transaction.on_commit`` in any thread;
members live on the server's event loop and are offered items with ``call_soon_threadsafe``, one
hand-off per loop for a whole burst of commits (from a database call, with the call's result:
``groupx_site/speedups/handoff.py``). A member is a ``Listener`` (one inbox, woken at
once) or anything else with ``loop``, ``_committed(frames)``, ``_wake_durable()`` and
``_offer_transient(envelope, text)`` (``text``: the envelope as the compact JSON its SSE frame carries,
encoded once per delta for every member, D70): the SSE streams of one loop join through one shared
member that paces their wake-ups (rooms/tail.py).

Other processes (split mode, docs/DECISIONS.md D43) are reached through the channel layer: every
commit and transient also goes, batched per burst and tagged with this process's id, to the group
``groupx.bus``; each web process runs one relay that receives on its own channel in that group and
hands the other processes' items to its local members exactly as if they had been written here
(the agents' worker has no members: it only sends, D59).
With the in-memory layer (the embedded default) there is no other process: no relay runs and
nothing is sent, so the local fast path costs what it did. A message the layer loses only delays:
the SSE tail reads the table on any gap and every two seconds (rooms/tail.py), and the waits of
``ask`` and ``watch`` read it again at an interval too.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from typing import Any

from groupx_site.core.text import json_text
from groupx_site.speedups import handoff
from groupx_site.store import layer
from rooms.event_types import TURN_CONTENT_DELTA

logger = logging.getLogger("groupx.bus")

BUS_GROUP = "groupx.bus"
RELAY_RETRY_SECONDS = 5.0  # the longest pause before the relay reconnects to an unreachable layer

_listeners: set = set()  # Listeners and other members (see the module docstring)
_lock = threading.Lock()


class Listener:
    """One SSE connection's inbox: a durable wake flag plus a bounded queue of transient frames."""

    def __init__(self, loop: asyncio.AbstractEventLoop, *, max_frames: int, max_bytes: int):
        self.loop = loop
        self.max_frames = max_frames
        self.max_bytes = max_bytes
        self.durable_pending = False
        self.transients: deque[dict[str, Any]] = deque()
        self.transient_bytes = 0
        self.dropped = 0
        self.signal = asyncio.Event()

    def _wake_durable(self) -> None:
        self.durable_pending = True
        self.signal.set()

    def _committed(self, frames: list[tuple[int, bytes | None]]) -> None:
        self._wake_durable()  # a plain inbox re-reads the table

    def _offer_transient(self, envelope: dict[str, Any], text: str) -> None:
        if self.offer(envelope, len(text)):
            self.signal.set()

    def offer(self, envelope: dict[str, Any], size: int) -> bool:
        """Queue (or merge) a transient without waking the reader; False when it was dropped."""
        if self._merge_into_last(envelope):
            return True
        if len(self.transients) >= self.max_frames or self.transient_bytes + size > self.max_bytes:
            self.dropped += 1  # a slow reader loses deltas, never durable events
            return False
        self.transients.append(envelope)
        self.transient_bytes += size
        return True

    def _merge_into_last(self, envelope: dict[str, Any]) -> bool:
        """Consecutive content deltas of one turn are merged while the reader is behind."""
        if not self.transients or envelope["type"] != TURN_CONTENT_DELTA:
            return False
        last = self.transients[-1]
        if last["type"] != TURN_CONTENT_DELTA or last["body"].get("turnId") != envelope["body"].get("turnId"):
            return False
        if len(self.transients) < max(8, self.max_frames // 4):
            return False  # merge only under pressure; normally each chunk goes out as sent
        merged = dict(last["body"])
        merged["text"] = merged.get("text", "") + envelope["body"].get("text", "")
        merged["chunkIndex"] = envelope["body"].get("chunkIndex", merged.get("chunkIndex"))
        self.transients[-1] = {**last, "body": merged}  # envelopes are shared between listeners: copy
        return True

    def take_transients(self) -> list[dict[str, Any]]:
        items = list(self.transients)
        self.transients.clear()
        self.transient_bytes = 0
        return items


def subscribe(*, max_frames: int = 512, max_bytes: int = 2_097_152) -> Listener:
    listener = Listener(asyncio.get_running_loop(), max_frames=max_frames, max_bytes=max_bytes)
    join(listener)
    return listener


def join(member) -> None:
    with _lock:
        _listeners.add(member)


def unsubscribe(member) -> None:
    with _lock:
        _listeners.discard(member)


leave = unsubscribe


def listener_count() -> int:
    return len(_listeners)


def wants_frames() -> bool:
    """Whether a commit should hand its encoded frame over: a local member or another process
    (through its relay) may take it without a read of the table."""
    return bool(_listeners) or _shared


def _by_loop() -> dict[asyncio.AbstractEventLoop, list]:
    with _lock:
        groups: dict[asyncio.AbstractEventLoop, list[Listener]] = {}
        for listener in _listeners:
            groups.setdefault(listener.loop, []).append(listener)
        return groups


def _call_each(method: str, *args) -> None:
    # One hand-off per event loop, not per listener: each call_soon_threadsafe is a write to the
    # loop's self-pipe and a GIL hand-off from the committing thread, so 50 streams made 50 of
    # them per commit (bench/, docs/PERFORMANCE.md).
    for loop, listeners in _by_loop().items():
        try:
            handoff.post(loop, _run_each, listeners, method, args)
        except RuntimeError:  # the loop is closed: its connections are gone
            for listener in listeners:
                unsubscribe(listener)


def _run_each(listeners: list, method: str, args: tuple) -> None:
    for listener in listeners:
        try:
            getattr(listener, method)(*args)
        except Exception as error:  # one broken inbox must not starve the others
            listener.loop.call_exception_handler({"message": f"bus listener {method} failed", "exception": error})


_committed_by_loop: dict[asyncio.AbstractEventLoop, list[tuple[int, bytes | None]]] = {}


def committed(seq: int, frame: bytes | None) -> None:
    """A durable event was committed (from ``transaction.on_commit``, on the committing thread, in
    commit order), with its SSE frame (None: encode it from the table). Events pile up per loop
    until that loop takes them: one hand-off however many commits a burst holds."""
    _hand_to_members(seq, frame)
    if _shared:
        _send_to_other_processes(["c", seq, frame])


def _hand_to_members(seq: int, frame: bytes | None) -> None:
    for loop in _by_loop():
        with _lock:
            batch = _committed_by_loop.setdefault(loop, [])
            batch.append((seq, frame))
            if len(batch) > 1:
                continue  # a hand-off that will take this one too is already on its way
        try:
            handoff.post(loop, _hand_over_committed, loop)
        except RuntimeError:  # the loop is closed: its connections are gone
            with _lock:
                _committed_by_loop.pop(loop, None)


def _hand_over_committed(loop: asyncio.AbstractEventLoop) -> None:
    with _lock:
        frames = _committed_by_loop.pop(loop, [])
    _run_each(_by_loop().get(loop, []), "_committed", (frames,))


def publish_transient(envelope: dict[str, Any]) -> None:
    _offer_to_members(envelope)
    if _shared:
        _send_to_other_processes(["t", envelope])


def _offer_to_members(envelope: dict[str, Any]) -> None:
    # One encoding for every member: the text an SSE frame carries (the tail's frame is built from
    # it), whose length is what the delta counts against a reader's byte budget. It was encoded
    # twice per delta, once here only to be measured (json.dumps's spaced text) and once by the tail.
    if _listeners:
        _call_each("_offer_transient", envelope, json_text(envelope))


# ---- the other processes, through the channel layer (split mode) ---------------------------------

_shared = False  # on a shared layer: this process's commits and deltas go to the other processes
_relay: asyncio.Task | None = None  # hears theirs (not in the agents' worker: see start_relay)
_outgoing: list[list[Any]] = []  # ["c", seq, frame] and ["t", envelope], in the order they happened


def _send_to_other_processes(item: list[Any]) -> None:
    """One layer message per burst: the first item queues a message that is made when the layer
    sends it (``layer.send_soon``); every item that comes before then goes with it. So while one
    message is on its way to Redis, the commits and deltas behind it gather into the next one,
    instead of each waiting for the sends of those before it (an agent's reply queued behind its
    own deltas, docs/DECISIONS.md D59)."""
    with _lock:
        _outgoing.append(item)
        if len(_outgoing) > 1:
            return  # the message already queued takes this one too
    layer.send_soon(BUS_GROUP, _take_outgoing)


def _take_outgoing() -> dict[str, Any] | None:
    with _lock:
        items = list(_outgoing)
        _outgoing.clear()
    return items_message(items) if items else None


def items_message(items: list[list[Any]]) -> dict[str, Any]:
    """The layer message of a burst: tagged with this process, whose relay skips its own."""
    return {"type": "bus.items", "origin": layer.PROCESS_ID, "items": items}


def start_relay(*, hear_others: bool = True) -> None:
    """Send this process's commits and deltas to the other processes and, with ``hear_others``,
    relay theirs to its members; on the loop the process has bound to the layer
    (``groupx_site/store/layer.py``). Only on a shared layer. The agents' worker hears nothing: its
    members would be SSE streams and the waits of ``ask`` and ``watch``, which only a web process
    serves, and on pub/sub it would otherwise receive every message of the room, its own included
    (about eight per Turn; D59)."""
    global _relay, _shared
    if not layer.is_shared():
        return
    _shared = True
    if _relay is None and hear_others:
        _relay = asyncio.get_running_loop().create_task(_run_relay(), name="groupx-bus-relay")


async def stop_relay() -> None:
    global _relay, _shared
    _shared = False
    relay, _relay = _relay, None
    if relay is not None:
        relay.cancel()
        await asyncio.gather(relay, return_exceptions=True)


async def _run_relay() -> None:
    channel_layer = layer.channel_layer()
    failures = 0
    while True:
        try:
            channel = await channel_layer.new_channel()
            await channel_layer.group_add(BUS_GROUP, channel)
            if failures:
                # While the layer was away other processes kept committing: the table has it.
                _call_each("_wake_durable")
                logger.info("bus relay: the channel layer is back")
            failures = 0
            await _relay_from(channel_layer, channel)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            failures += 1
            if failures == 1:
                logger.warning("bus relay: the channel layer failed (%s); retrying", error)
            await asyncio.sleep(min(RELAY_RETRY_SECONDS, 0.25 * 2**failures))


async def _relay_from(channel_layer, channel: str) -> None:
    # Pub/sub memberships do not expire (D59), and a receive must not be cancelled to renew one:
    # cancelling it unsubscribes the channel, and what is published meanwhile is lost.
    while True:
        message = await channel_layer.receive(channel)
        if message.get("origin") != layer.PROCESS_ID:  # our own come back through the group
            _hand_over_remote(message.get("items") or [])


def _hand_over_remote(items: list[list[Any]]) -> None:
    for item in items:
        if item[0] == "c":
            _hand_to_members(int(item[1]), item[2] if isinstance(item[2], bytes) else None)
        elif item[0] == "t" and isinstance(item[1], dict):
            _offer_to_members(item[1])

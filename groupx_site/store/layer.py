"""The channel layer as GroupX's processes use it (docs/DECISIONS.md D43).

``settings.CHANNEL_LAYERS`` is Channels' ``InMemoryChannelLayer`` in the embedded default (one
process) and ``channels_redis``'s pub/sub layer on loopback when ``groupx.json`` names
``channelLayer.redisUrl`` (split mode, D59). Either way the layer is only a wake-up and a shortcut:
the event table is the truth, so a message the layer loses (pub/sub delivers at most once: a
subscriber reconnecting, or Redis restarting, misses what was published meanwhile) delays
something, never loses it.

Layer calls are coroutines bound to one event loop (the in-memory layer's queues, the Redis
connection pools), while GroupX's writers call from ``transaction.on_commit`` on the writer thread.
``send_soon`` is the one thread-safe way out: messages go into one outbox per group, each sent in
order by one task on the loop the process ``bind``s (the server's loop, or the worker's). A group's
messages keep their order; two groups' do not wait for each other (a wake-up of the agents never
queues behind the bus's deltas), and nothing orders them anyway: each receiver reads the table.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any

from channels.layers import BaseChannelLayer, InMemoryChannelLayer, get_channel_layer

from groupx_site.speedups import handoff

logger = logging.getLogger("groupx.layer")

# The agent runtime's consumer (agents/channel_consumer.py) is served on this channel by a Channels worker
# (in the server process by default, ``manage.py runworker groupx-agents`` in split mode) and joins
# this group, to which the web side sends its wake-ups (new work, cancel, restart, native reset).
AGENTS_CHANNEL = "groupx-agents"
AGENTS_GROUP = "groupx.agents"

# Tags what this process sends, so that its own messages coming back through a group are skipped.
PROCESS_ID = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

# A message, or what makes it when its turn to be sent comes (None: nothing to send after all).
Message = dict[str, Any] | Callable[[], dict[str, Any] | None]

_loop: asyncio.AbstractEventLoop | None = None
_outboxes: dict[str, deque[Message]] = {}
_outbox_lock = threading.Lock()
_draining: set[str] = set()
_tasks: set[asyncio.Task[None]] = set()


def channel_layer() -> BaseChannelLayer:
    return get_channel_layer()


def is_shared() -> bool:
    """True when other processes can be on the layer (Redis); the in-memory layer reaches only
    this process, so there is nobody to relay anything to."""
    return not isinstance(channel_layer(), InMemoryChannelLayer)


def bind(loop: asyncio.AbstractEventLoop) -> None:
    """The loop this process makes its layer calls on (the server's or the worker's)."""
    global _loop
    _loop = loop


def bound_loop() -> asyncio.AbstractEventLoop | None:
    return _loop if _loop is not None and not _loop.is_closed() else None


def wake_agents_on_commit(message: dict[str, Any]) -> None:
    """Send ``message`` to the agent runtime once the current transaction commits (a rollback
    sends nothing)."""
    from django.db import transaction

    transaction.on_commit(lambda: send_soon(AGENTS_GROUP, message))


def send_soon(group: str, message: Message) -> None:
    """``group_send`` from any thread, after what this process sent to ``group`` before, without
    waiting. A callable ``message`` is called once, when its turn comes, on the loop: whatever
    piled up while the sends before it were on their way leaves in that one message
    (``rooms/bus.py``); if the process stops first it is called all the same, its message dropped.
    Before the process has bound a loop (a management command, the in-process test tier) there is
    nobody to wake: the receivers find the work in the table when they start."""
    loop = bound_loop()
    if loop is None:
        _discard(deque([message]))
        return
    with _outbox_lock:
        outbox = _outboxes.setdefault(group, deque())
        outbox.append(message)
        if len(outbox) > 1:
            return  # a drain that will take this one too is already on its way
    try:  # (a drain busy sending the message before finds this one next: the start is then a no-op)
        handoff.post(loop, _start_drains)  # from a database call: with its result (D60)
    except RuntimeError:  # the loop closed meanwhile: the process is stopping
        _discard(outbox)


def _start_drains() -> None:
    # The agents' wake-ups first: they start a Turn, while the bus only spares a read of the table,
    # and the Redis layer sends one message at a time (a wake-up behind the commit that queued it
    # took one more round trip on a busy loop, docs/DECISIONS.md D59).
    with _outbox_lock:
        waiting = sorted((group for group, outbox in _outboxes.items() if outbox), key=lambda g: g != AGENTS_GROUP)
    for group in waiting:
        _start_drain(group)


def _start_drain(group: str) -> None:
    if group in _draining:
        return
    _draining.add(group)
    task = asyncio.get_running_loop().create_task(_drain(group), name=f"groupx-layer-outbox:{group}")
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


async def _drain(group: str) -> None:
    layer = channel_layer()
    outbox = _outboxes[group]
    try:
        while True:
            with _outbox_lock:
                if not outbox:
                    return
                queued = outbox.popleft()
            message = queued() if callable(queued) else queued
            if message is None:
                continue
            try:
                await layer.group_send(group, message)
            except Exception as error:  # a lost wake-up only delays (the receivers poll the table)
                logger.warning("channel layer: %s to %s was not sent (%s)", message.get("type"), group, error)
    except asyncio.CancelledError:  # the process stops: what is left is in the table anyway
        _discard(outbox)
        raise
    finally:
        _draining.discard(group)
        with _outbox_lock:
            left = bool(outbox)
        if left:  # cancelled, or a message came in after the last check: the next drain sends it
            asyncio.get_running_loop().call_soon(_start_drain, group)


def _discard(outbox: deque[Message]) -> None:
    with _outbox_lock:
        dropped = list(outbox)
        outbox.clear()
    for message in dropped:
        if callable(message):
            message()  # its maker counts on being called once (rooms/bus.py)

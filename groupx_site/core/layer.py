"""The channel layer as GroupX's processes use it (docs/DECISIONS.md D43).

``settings.CHANNEL_LAYERS`` is Channels' ``InMemoryChannelLayer`` in the embedded default (one
process) and ``channels_redis`` on loopback when ``groupx.json`` names ``channelLayer.redisUrl``
(split mode). Either way the layer is only a wake-up and a shortcut: the event table is the truth,
so a message the layer loses or drops (channels_redis drops group messages to a full channel; Redis
may restart) delays something, never loses it.

Layer calls are coroutines bound to one event loop (the in-memory layer's queues, the Redis
connection pools), while GroupX's writers call from ``transaction.on_commit`` on the writer thread.
``send_soon`` is the one thread-safe way out: messages go into one outbox per process, sent in
order by one task on the loop the process ``bind``s (the server's loop, or the worker's).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import uuid
from collections import deque
from typing import Any

from channels.layers import InMemoryChannelLayer, get_channel_layer

from groupx_site.core import handoff

logger = logging.getLogger("groupx.layer")

# The agent runtime's consumer (agents/worker.py) is served on this channel by a Channels worker
# (in the server process by default, ``manage.py runworker groupx-agents`` in split mode) and joins
# this group, to which the web side sends its wake-ups (new work, cancel, restart, native reset).
AGENTS_CHANNEL = "groupx-agents"
AGENTS_GROUP = "groupx.agents"

# Tags what this process sends, so that its own messages coming back through a group are skipped.
PROCESS_ID = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

_loop: asyncio.AbstractEventLoop | None = None
_outbox: deque[tuple[str, dict[str, Any]]] = deque()
_outbox_lock = threading.Lock()
_draining = False
_tasks: set[asyncio.Task] = set()


def channel_layer():
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


def send_soon(group: str, message: dict[str, Any]) -> None:
    """``group_send`` from any thread, in order, without waiting. Before the process has bound a
    loop (a management command, the in-process test tier) there is nobody to wake: the receivers
    find the work in the table when they start."""
    loop = bound_loop()
    if loop is None:
        return
    with _outbox_lock:
        _outbox.append((group, message))
        if len(_outbox) > 1:
            return  # a drain that will take this one too is already on its way
    try:
        handoff.post(loop, _start_drain)  # from a database call: with its result (D60)
    except RuntimeError:  # the loop closed meanwhile: the process is stopping
        with _outbox_lock:
            _outbox.clear()


def _start_drain() -> None:
    global _draining
    if _draining:
        return
    _draining = True
    task = asyncio.get_running_loop().create_task(_drain(), name="groupx-layer-outbox")
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


async def _drain() -> None:
    global _draining
    layer = channel_layer()
    try:
        while True:
            with _outbox_lock:
                if not _outbox:
                    return
                group, message = _outbox[0]
            try:
                await layer.group_send(group, message)
            except Exception as error:  # a lost wake-up only delays (the receivers poll the table)
                logger.warning("channel layer: %s to %s was not sent (%s)", message.get("type"), group, error)
            with _outbox_lock:
                _outbox.popleft()
    except asyncio.CancelledError:  # the process stops: what is left is in the table anyway
        with _outbox_lock:
            _outbox.clear()
        raise
    finally:
        _draining = False
        with _outbox_lock:
            left = bool(_outbox)
        if left:  # cancelled, or a message came in after the last check: the next drain sends it
            asyncio.get_running_loop().call_soon(_start_drain)

"""Calls from the database threads back to an event loop, one wake-up per database call
(docs/DECISIONS.md D60).

Every ``loop.call_soon_threadsafe`` writes a byte to the loop's self-pipe, and the loop then reads
it: two system calls and a GIL hand-off each. One writer call of a Turn used to make three of them
(the committed frames for the SSE tail, the wake-up of the lanes on the channel layer, the call's
result), so ``groupx_site/store/db.py`` runs each call inside ``collecting(loop)``: what the call
posts to the loop that awaits it waits in a list, and the result carries the list back in one
``call_soon_threadsafe``, where the posts run first, in the order they were made, before the
awaiting coroutine resumes (as they did when each was its own hand-off).

Results of several calls that finish while the loop is busy share one wake-up (``deliver``,
docs/DECISIONS.md D68): while a delivery to a loop is on its way and not yet drained, the next
joins it instead of writing another byte; the loop's one callback runs them in the order they
finished, each call's posts before its caller resumes, as separate callbacks would have.

A post from the loop's own thread (a lane publishing a reply's delta) is a plain ``call_soon``:
the loop is awake, and a byte through its self-pipe would only wake it once more. A post from
anywhere else (another thread, a call made from another loop) goes at once with
``call_soon_threadsafe``.

With the ``handoff`` speedup off, every post and every result is its own ``call_soon_threadsafe``,
in the order they are made (the same order the kept lists run in).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from groupx_site.speedups import switches

_collecting = threading.local()
# Deliveries on their way to each loop: a loop is a key from the wake-up that carries its list
# until the loop drains it (one ``call_soon_threadsafe`` per list, not per delivery).
_on_their_way: dict[asyncio.AbstractEventLoop, list[tuple[Callable[..., Any], tuple]]] = {}
_on_their_way_lock = threading.Lock()


def post(loop: asyncio.AbstractEventLoop, callback: Callable[..., Any], *args: Any) -> None:
    """``loop.call_soon_threadsafe(callback, *args)``, or with the result of the database call
    running on this thread when that call was made from ``loop``. Raises RuntimeError, as
    ``call_soon_threadsafe`` does, when a closed loop is asked at once."""
    if not switches.is_on("handoff"):
        loop.call_soon_threadsafe(callback, *args)
        return
    pending = getattr(_collecting, "pending", None)
    if pending is not None and pending[0] is loop:
        pending[1].append((callback, args))
        return
    if _running_loop() is loop:
        loop.call_soon(callback, *args)
        return
    loop.call_soon_threadsafe(callback, *args)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:  # a thread without a running loop (the database threads)
        return None


@contextlib.contextmanager
def collecting(loop: asyncio.AbstractEventLoop) -> Iterator[list[tuple[Callable[..., Any], tuple]]]:
    """While the block runs on this thread, posts to ``loop`` are kept in the list it yields."""
    posts: list[tuple[Callable[..., Any], tuple]] = []
    if not switches.is_on("handoff"):  # each post went at once: nothing is kept
        yield posts
        return
    _collecting.pending = (loop, posts)
    try:
        yield posts
    finally:
        _collecting.pending = None


def run_posts(loop: asyncio.AbstractEventLoop, posts: list[tuple[Callable[..., Any], tuple]]) -> None:
    """Run the kept posts on ``loop`` (its own thread); one failing must not stop the others, as
    separate loop callbacks would not have."""
    for callback, args in posts:
        try:
            callback(*args)
        except Exception as error:
            loop.call_exception_handler({"message": f"posted callback {callback!r} failed", "exception": error})


def deliver(loop: asyncio.AbstractEventLoop, callback: Callable[..., Any], *args: Any) -> None:
    """``callback(*args)`` on ``loop`` from another thread: with the wake-up already on its way to
    ``loop`` if there is one, else in a new one. Nothing happens if ``loop`` is closed (nobody
    waits there any more)."""
    if not switches.is_on("handoff"):
        with contextlib.suppress(RuntimeError):  # the loop is closed
            loop.call_soon_threadsafe(callback, *args)
        return
    with _on_their_way_lock:
        batch = _on_their_way.get(loop)
        if batch is not None and not loop.is_closed():
            batch.append((callback, args))
            return
        _on_their_way[loop] = [(callback, args)]  # a closed loop's leftover list goes with it
    try:
        loop.call_soon_threadsafe(_drain, loop)
    except RuntimeError:  # the loop is closed
        with _on_their_way_lock:
            _on_their_way.pop(loop, None)


def _drain(loop: asyncio.AbstractEventLoop) -> None:
    with _on_their_way_lock:
        batch = _on_their_way.pop(loop, [])
    run_posts(loop, batch)

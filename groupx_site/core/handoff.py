"""Calls from the database threads back to an event loop, one wake-up per database call
(docs/DECISIONS.md D60).

Every ``loop.call_soon_threadsafe`` writes a byte to the loop's self-pipe, and the loop then reads
it: two system calls and a GIL hand-off each. One writer call of a Turn used to make three of them
(the committed frames for the SSE tail, the wake-up of the lanes on the channel layer, the call's
result), so ``groupx_site/core/db.py`` runs each call inside ``collecting(loop)``: what the call
posts to the loop that awaits it waits in a list, and the result carries the list back in one
``call_soon_threadsafe``, where the posts run first, in the order they were made, before the
awaiting coroutine resumes (as they did when each was its own hand-off).

A post from the loop's own thread (a lane publishing a reply's delta) is a plain ``call_soon``:
the loop is awake, and a byte through its self-pipe would only wake it once more. A post from
anywhere else (another thread, a call made from another loop) goes at once with
``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

_collecting = threading.local()


def post(loop: asyncio.AbstractEventLoop, callback: Callable[..., Any], *args: Any) -> None:
    """``loop.call_soon_threadsafe(callback, *args)``, or with the result of the database call
    running on this thread when that call was made from ``loop``. Raises RuntimeError, as
    ``call_soon_threadsafe`` does, when a closed loop is asked at once."""
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

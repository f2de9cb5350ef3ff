"""``POST /api/runtime/shutdown``: the narrow loopback stop used by ``groupx stop|restart`` (PROTOCOL §10.8).

A stop is not a room command: it writes no client command, no event and no lock file. The 202
goes out first; only after it has been sent does the process drain:

1. readiness becomes ``closing``: health answers 503 with the full identity (so the CLI does not
   mistake the closing listener for a foreign one) and every other request gets 503;
2. open SSE streams are ended;
3. the agent runtime closes its lanes and process trees (bounded);
4. the database connections close;
5. the HTTP listener is released last: the port is the single-runtime lease, and letting it go
   earlier would let a new ``groupx start`` bind while this process still owns sessions.

Repeated requests are harmless: the drain runs once per process.

``POST /api/runtime/restart`` (the /setup page's "Restart GroupX now"; docs/DECISIONS.md D114) is
the same stop, after which the process starts itself again with
the same command line (``os.execv``): a fresh runtime reads the saved config, in the terminal that
started the first one. Nothing is swapped inside a running runtime (PROTOCOL §10.6).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import re
import signal
import sys
from collections.abc import AsyncIterator

from django.conf import settings
from django.db import connections
from django.http import HttpRequest, JsonResponse
from ninja import Router
from pydantic import ConfigDict, Field

from groupx_site import process_runtime, runtime_identity
from groupx_site.core import process_state
from groupx_site.core.contract import Checked, route
from groupx_site.core.errors import GroupXError
from groupx_site.store import db
from rooms.schemas import Response

logger = logging.getLogger("groupx.shutdown")
router = Router(tags=["runtime"])

SCOPE_KEY_RE = re.compile(r"^[0-9a-f]{64}$")
SSE_CLOSE_SECONDS = 1.0

_drain: asyncio.Future | None = None
_open_streams: set[_OpenStream] = set()


def check_shutdown_request(body: object) -> str:
    """The requested scope key, or INVALID_ENVELOPE / STORE_CONFLICT; nothing stops on an error."""
    if not isinstance(body, dict) or set(body) != {"runtimeScopeKey"}:
        raise GroupXError("INVALID_ENVELOPE", "the body must be exactly {runtimeScopeKey}")
    key = body["runtimeScopeKey"]
    if not isinstance(key, str) or not SCOPE_KEY_RE.match(key):
        raise GroupXError("INVALID_ENVELOPE", "runtimeScopeKey must be 64 lowercase hex characters")
    if key != runtime_identity.runtime_scope_key(settings.GROUPX_CONFIG_PATH):
        raise GroupXError("STORE_CONFLICT", "runtimeScopeKey does not match this runtime's config path; nothing stops")
    return key


class ShutdownBody(Checked):
    """Exactly the runtimeScopeKey ``GET /api/health`` gave: a stop aimed at another config path stops nothing."""

    model_config = ConfigDict(title="ShutdownBody")
    check = check_shutdown_request

    runtimeScopeKey: str = Field(pattern=SCOPE_KEY_RE.pattern)


class ShutdownAccepted(Response):
    accepted: bool
    runtimeKey: str
    runtimeScopeKey: str


class DrainAfterResponse(JsonResponse):
    """Starts the drain from ``close()``, which the ASGI handler calls once the body has been sent."""

    def __init__(self, data: dict, *, loop: asyncio.AbstractEventLoop, **kwargs):
        super().__init__(data, **kwargs)
        self._loop = loop

    def close(self) -> None:
        super().close()
        self._loop.call_soon_threadsafe(begin_drain)


@router.post(
    "/runtime/restart",
    summary="Stop this runtime and start it again with the saved config (the setup page's Restart GroupX now)",
    **route({202: ShutdownAccepted}, write=True, errors={409: ("STORE_CONFLICT",)}),
)
async def post_restart(request: HttpRequest, body: ShutdownBody):
    if not is_draining():  # a restart asked for after a plain stop began is only that stop
        atexit.register(start_again)
    return await post_shutdown(request, body)


def start_again() -> None:
    """Run at the interpreter's exit, after the drain released the port: the same command line
    replaces this process (same PID, same terminal), which opens no second browser tab."""
    logger.info("GroupX is starting again with the saved config")
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os.environ["GROUPX_RESTARTED"] = "1"
    os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])


@router.post(
    "/runtime/shutdown",
    summary="Stop this runtime (groupx stop / restart)",
    **route({202: ShutdownAccepted}, write=True, errors={409: ("STORE_CONFLICT",)}),
)
async def post_shutdown(request: HttpRequest, body: ShutdownBody):
    scope_key = body.checked
    body = {
        "accepted": True,
        "runtimeKey": runtime_identity.runtime_key(settings.GROUPX_CONFIG, settings.GROUPX_CONFIG_PATH),
        "runtimeScopeKey": scope_key,
    }
    return DrainAfterResponse(body, loop=asyncio.get_running_loop(), status=202)


def begin_drain() -> None:
    """Idempotent; runs on the server's event loop."""
    global _drain
    if _drain is None:
        _drain = asyncio.ensure_future(_drain_and_stop())


def is_draining() -> bool:
    return _drain is not None


async def _drain_and_stop() -> None:
    process_state.set_readiness("closing")
    for open_stream in list(_open_streams):
        open_stream.end()
    close_seconds = settings.GROUPX_CONFIG.timeouts.closeMs / 1000
    try:
        await asyncio.wait_for(process_runtime.shutdown(), timeout=3 * close_seconds + 1)
    except TimeoutError:  # child processes still die with us (PR_SET_PDEATHSIG)
        logger.warning("the agent runtime did not close within %.1fs; stopping anyway", 3 * close_seconds + 1)
    except Exception:
        logger.exception("closing the agent runtime failed; stopping anyway")
    deadline = asyncio.get_running_loop().time() + SSE_CLOSE_SECONDS
    while _open_streams and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.02)
    await db.write(connections.close_all)()  # the writer's long-lived connection
    await cancel_leftover_tasks()
    logger.info("GroupX runtime closed; releasing the port")
    stop_listener()


async def cancel_leftover_tasks(timeout: float = 1.0) -> None:
    """Nothing outlives the runtime: a task still suspended when the interpreter exits is torn down
    by the garbage collector during finalization, which has crashed CPython 3.11 (SIGSEGV)."""
    current = asyncio.current_task()
    leftovers = [task for task in asyncio.all_tasks() if task is not current and not task.done()]
    for task in leftovers:
        task.cancel()
    if leftovers:
        await asyncio.wait(leftovers, timeout=timeout)


def stop_listener() -> None:
    twisted_reactor = sys.modules.get("twisted.internet.reactor")
    if twisted_reactor is not None and twisted_reactor.running:
        twisted_reactor.stop()  # daphne: its "before shutdown" trigger finds the runtime already closed
        return
    os.kill(os.getpid(), signal.SIGTERM)  # another ASGI server: its own graceful stop


class _OpenStream:
    """One SSE body that a drain must end: the task reading it, and whether it is waiting for its
    next chunk (then the drain cancels that wait) or sending one (then it ends before the next)."""

    def __init__(self, task: asyncio.Task):
        self.task = task
        self.waiting = False
        self.ending = False
        self.cancelled_by_drain = False

    def end(self) -> None:
        self.ending = True
        if self.waiting and not self.cancelled_by_drain:
            self.cancelled_by_drain = True
            self.task.cancel()


async def end_on_drain(stream: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """Pass an SSE body through until the runtime starts draining, then end it cleanly.

    The stream may sit in a long wait between frames, so the drain cannot just be checked between
    chunks: a drain during that wait cancels the reading task's wait for the next chunk, and the
    stream ends there. Not a new task and an ``asyncio.wait`` for every chunk, which was ~2 % of a
    Turn's CPU with one stream open (docs/DECISIONS.md D60).
    """
    if is_draining():
        return
    open_stream = _OpenStream(asyncio.current_task())
    _open_streams.add(open_stream)
    iterator = aiter(stream)
    try:
        while not open_stream.ending:
            open_stream.waiting = True
            try:
                chunk = await anext(iterator)
            except StopAsyncIteration:
                return
            except asyncio.CancelledError:
                # Ours: the stream ends. Anyone else's (the client left) goes on as it came.
                if open_stream.cancelled_by_drain and open_stream.task.uncancel() == 0:
                    return
                raise
            finally:
                open_stream.waiting = False
            yield chunk
    finally:
        _open_streams.discard(open_stream)
        with contextlib.suppress(Exception):
            await iterator.aclose()

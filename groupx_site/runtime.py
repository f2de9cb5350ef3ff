"""The one runtime of a GroupX process: started once, after the HTTP port is bound.

"After the bind" matters: restart recovery and session start write to the store and touch
bindings, and a second ``groupx start`` that loses the port race must not. Daphne runs its reactor
(and so ``callWhenRunning``) only after a successful listen; a request proves the bind too.

Startup order (FEATURES §7): stale-state recovery, then agent sessions and lanes, then readiness.
Nothing here may hold a database transaction across an ``await``: ORM work runs in
``sync_to_async`` functions.
"""

from __future__ import annotations

import asyncio
import gc
import logging

from groupx_site.core import db, lifecycle, store_faults

logger = logging.getLogger("groupx.runtime")

_started: asyncio.Future | None = None
_first_attempt: asyncio.Event | None = None  # set once the first start attempt has ended
_stopped: asyncio.Future | None = None
_migrate_first = False


def migrate_before_start() -> None:
    """``groupx start`` applies pending migrations itself, but only here, once it holds the port:
    the port is the single-runtime lease, and a process that loses the race must write nothing."""
    global _migrate_first
    _migrate_first = True


def _prepare_store() -> None:
    from agents.roster import sync_actors

    if _migrate_first:
        from django.core.management import call_command

        call_command("migrate", interactive=False, verbosity=0)
    sync_actors()


async def _start() -> None:
    """Start, and while the store is at fault (a read-only or full disk, a lock another process
    holds) wait and start again: readiness stays ``starting``, health says when the next try is
    (docs/DECISIONS.md D24). Any other failure is final, as before."""
    backoff = store_faults.Backoff()
    while True:
        try:
            await db.write(_prepare_store)()
            from agents import runtime as agent_runtime

            await agent_runtime.start()
            break
        except store_faults.StoreUnavailable as fault:
            delay = backoff.next_delay()
            lifecycle.start_attempt_failed(fault.code, fault.message, delay)
            _first_attempt.set()
            logger.warning("GroupX runtime could not start (%s); trying again in %.1f s", fault.message, delay)
            await asyncio.sleep(delay)
        except Exception as error:
            lifecycle.start_attempt_failed("INTERNAL_ERROR", str(error)[:256], None)
            lifecycle.set_readiness("failed")
            _first_attempt.set()
            logger.exception("GroupX runtime failed to start")
            raise
    lifecycle.set_readiness("ready")
    _first_attempt.set()
    _freeze_startup_objects()
    logger.info("GroupX runtime ready%s", f" after {backoff.failures + 1} attempts" if backoff.failures else "")


def _freeze_startup_objects() -> None:
    """Keep the ~half a million objects of startup (Django, twisted, the MCP SDK, ...) out of the
    garbage collector's full passes: each full pass walked them all and stalled the server for
    ~100 ms every few hundred Turns (``make bench``'s latency maximum; docs/PERFORMANCE.md)."""
    gc.collect()
    gc.freeze()


def begin_start() -> asyncio.Future:
    """Start once per process without waiting (health answers while the runtime starts)."""
    global _started, _first_attempt
    if _started is None:  # no await between the check and the assignment: one start per process
        _first_attempt = asyncio.Event()
        _started = asyncio.ensure_future(_start())
        _started.add_done_callback(lambda f: f.cancelled() or f.exception())  # _start logs its failure
    return _started


async def ensure_started() -> None:
    started = begin_start()
    if not started.done():
        await asyncio.shield(started)


async def wait_for_first_attempt() -> None:
    """For requests: wait for the start, but not through its retries. A start waiting for the
    store (D24) lets requests through: health and reads answer, writes get 503 from the
    readiness check, instead of every request hanging until the fault clears."""
    started = begin_start()
    if not started.done():
        await _first_attempt.wait()
    if started.done():
        started.result()  # a final failure is raised, as before


def schedule_start() -> None:
    asyncio.get_event_loop().create_task(ensure_started())


async def _stop() -> None:
    from agents import runtime as agent_runtime
    from agents.mcp import server as member_mcp

    lifecycle.set_readiness("closing")
    await member_mcp.stop()
    await agent_runtime.stop()


async def shutdown() -> None:
    """The protocol's order: MCP handlers, then agent sessions; the listener is released last by
    the server itself. Idempotent: the shutdown endpoint and daphne's "before shutdown" trigger
    both call it."""
    global _stopped
    if _stopped is None:
        _stopped = asyncio.ensure_future(_stop())
    await asyncio.shield(_stopped)

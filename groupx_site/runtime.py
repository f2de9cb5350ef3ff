"""The one runtime of a GroupX process: started once, after the HTTP port is bound.

Startup order (FEATURES §7): stale-state recovery, then agent sessions and lanes, then readiness.
Nothing here may hold a database transaction across an ``await``: ORM work runs in
``sync_to_async`` functions.
"""

from __future__ import annotations

import asyncio
import logging

from asgiref.sync import sync_to_async

from groupx_site import lifecycle

logger = logging.getLogger("groupx.runtime")

_started: asyncio.Future | None = None


def _prepare_store() -> None:
    from agents.roster import sync_actors

    sync_actors()


async def _start() -> None:
    try:
        await sync_to_async(_prepare_store, thread_sensitive=True)()
        from agents import runtime as agent_runtime

        await agent_runtime.start()
        lifecycle.set_readiness("ready")
        logger.info("GroupX runtime ready")
    except Exception:
        lifecycle.set_readiness("failed")
        logger.exception("GroupX runtime failed to start")
        raise


async def ensure_started() -> None:
    global _started
    if _started is None:  # no await between the check and the assignment: one start per process
        _started = asyncio.ensure_future(_start())
    if not _started.done():
        await asyncio.shield(_started)


def schedule_start() -> None:
    asyncio.get_event_loop().create_task(ensure_started())


async def shutdown() -> None:
    """The protocol's order: MCP handlers, then agent sessions; the listener is released last by
    the server itself."""
    from agents import runtime as agent_runtime
    from agents.mcp import server as member_mcp

    lifecycle.set_readiness("closing")
    await member_mcp.stop()
    await agent_runtime.stop()

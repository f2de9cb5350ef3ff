"""The background memory task the agent runtime starts: it checks which dated-memory batches are
due and rolls them up, one at a time (FEATURES §15.3).

It polls because "due" depends on the clock (a quiet period, a date change, a backoff running out),
not only on writes. Pending sources live in the store, so work left by a stopped process is picked
up by the next one. ``GROUPX_MEMORY_TICK_MS`` shortens the period for tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os

from groupx_site.core.store_faults import StoreUnavailable
from memory import dated

logger = logging.getLogger("groupx.memory.scheduler")
_task: asyncio.Task | None = None


def tick_seconds() -> float:
    return int(os.environ.get("GROUPX_MEMORY_TICK_MS", 15_000)) / 1000


async def _run() -> None:
    while True:
        try:
            await dated.run_due()
        except asyncio.CancelledError:
            raise
        except StoreUnavailable as fault:  # a full or locked disk: the due batches wait (D24)
            logger.warning("dated memory scheduling waits: %s", fault.message)
        except Exception:  # a bad batch must not end the scheduler; it is retried next tick
            logger.exception("dated memory scheduling failed")
        await asyncio.sleep(tick_seconds())


def start() -> None:
    global _task
    if _task is None:
        _task = asyncio.get_running_loop().create_task(_run(), name="memory-scheduler")


async def stop() -> None:
    global _task
    task, _task = _task, None
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task

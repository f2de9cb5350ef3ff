"""The background memory task the agent runtime starts: it checks which dated-memory batches are
due and rolls them up, one at a time (FEATURES §15.3).

It polls because "due" depends on the clock (a quiet period, a date change, a backoff running out),
not only on writes. Pending sources live in the store, so work left by a stopped process is picked
up by the next one. ``GROUPX_MEMORY_TICK_MS`` shortens the period for tests.
"""

from __future__ import annotations

import asyncio
import logging
import os

from groupx_site.core.background import BackgroundTask
from groupx_site.store.store_faults import StoreUnavailable
from memory import dated

logger = logging.getLogger("groupx.memory.scheduler")


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


_scheduler = BackgroundTask("memory-scheduler", _run)
start = _scheduler.start
stop = _scheduler.stop

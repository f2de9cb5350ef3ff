"""The agent runtime: restart recovery, one session and one FIFO lane per live agent, and the
commit-time wake-ups from the turn actions (docs/ARCHITECTURE.md "The dispatch path"; docs/RELIABILITY.md).
"""

from __future__ import annotations

import asyncio
import logging

from agents import health, instances
from agents.lanes import Lane
from agents.sessions import AgentSessions
from groupx_site.core import db
from memory import scheduler as memory_scheduler
from setup_wizard import roster
from turns import lifecycle, wakeups

logger = logging.getLogger("groupx.runtime")

_lanes: dict[str, Lane] = {}
_loop: asyncio.AbstractEventLoop | None = None


def _recover() -> dict[str, int]:
    closed = instances.close_stale_launches()
    counts = lifecycle.recover_after_restart()
    absent = lifecycle.fail_queued_for_absent_agents({agent.actor_id for agent in roster.live_agents()})
    if closed or absent or any(counts.values()):
        logger.info("restart recovery: %s stale bindings closed, %s; %s queued Turns of agents no longer "
                    "configured failed", closed, counts, absent)
    return counts


def _on_new_work(actor_ids: list[str]) -> None:
    if _loop is None:
        return
    for actor_id in actor_ids:
        lane = _lanes.get(actor_id)
        if lane is not None:
            _loop.call_soon_threadsafe(lane.poke)


def _on_cancel(turn_id: str) -> None:
    if _loop is None:
        return

    def deliver() -> None:
        for lane in _lanes.values():
            if lane.request_cancel(turn_id):
                return

    _loop.call_soon_threadsafe(deliver)


async def start() -> None:
    global _loop
    _loop = asyncio.get_running_loop()
    await db.write(_recover)()
    wakeups.clear()
    wakeups.on_new_work(_on_new_work)
    wakeups.on_cancel(_on_cancel)
    for agent in roster.live_agents():
        if agent.actor_id in _lanes:  # a start retried after a store fault (D24) keeps its lanes
            continue
        health.update(agent.actor_id, status="starting")
        lane = Lane(AgentSessions(agent))
        _lanes[agent.actor_id] = lane
        lane.start()
    memory_scheduler.start()  # dated-memory rollups for due batches (issue 7)


async def stop() -> None:
    """Close lanes and sessions; write no event (a Turn cut off here is interrupted on restart)."""
    await memory_scheduler.stop()  # before the sessions: a rollup in flight closes its own CLI
    lanes = list(_lanes.values())
    _lanes.clear()
    for lane in lanes:
        await lane.stop()
    await asyncio.gather(*(lane.sessions.close() for lane in lanes), return_exceptions=True)


def lane(actor_id: str) -> Lane | None:
    return _lanes.get(actor_id)

"""The agent runtime: restart recovery, one session and one FIFO lane per live agent, and what the
wake-ups from the web side do (they arrive over the channel layer: agents/worker.py)
(docs/ARCHITECTURE.md "The dispatch path"; docs/RELIABILITY.md).

``start`` keeps FEATURES §7's order (docs/DECISIONS.md D42): close the stale launches of the last
process, start every agent's session (in parallel; readiness waits for them, at most the
handshake timeout), then Broker recovery of the Turns left in flight, then the lanes, then the
dated-memory scheduler, which picks up the rollups left pending. The caller then says ready.
"""

from __future__ import annotations

import asyncio
import logging
import os

from django.conf import settings

from agents import health, instances
from agents.drivers import secret_file
from agents.lanes import Lane
from agents.sessions import AgentSessions, private_dir_path
from groupx_site.core import db
from memory import scheduler as memory_scheduler
from setup_wizard import roster
from turns import lifecycle

logger = logging.getLogger("groupx.runtime")

_lanes: dict[str, Lane] = {}
_stale_closed = False  # once per process: a start retried after a store fault keeps its new bindings
_restarts: set[asyncio.Task] = set()


def _close_stale_launches() -> None:
    global _stale_closed
    if _stale_closed:
        return
    closed = instances.close_stale_launches()
    _stale_closed = True
    if closed:
        logger.info("restart recovery: %s stale bindings closed", closed)


def _recover_turns() -> dict[str, int]:
    counts = lifecycle.recover_after_restart()
    absent = lifecycle.fail_queued_for_absent_agents({agent.actor_id for agent in roster.live_agents()})
    if absent or any(counts.values()):
        logger.info("restart recovery: %s; %s queued Turns of agents no longer configured failed", counts, absent)
    return counts


def session_start_wait_seconds() -> float:
    """How long readiness waits for the agents' sessions: one handshake timeout by default, so a
    CLI that hangs at start delays the room by one handshake at most and then fails its own
    Turns only. ``GROUPX_SESSION_START_WAIT_MS`` overrides it (the test harness, whose agents
    hang in their handshake on purpose, sets 0)."""
    override = os.environ.get("GROUPX_SESSION_START_WAIT_MS")
    if override is not None:
        return int(override) / 1000
    return settings.GROUPX_CONFIG.timeouts.handshakeMs / 1000


# ---- the wake-ups, called on the runtime's loop by its consumer on the channel layer (agents/worker.py)


def wake(actor_ids: list[str]) -> None:
    """These agents have new work (or must look at the native-reset mark)."""
    for actor_id in actor_ids:
        lane = _lanes.get(actor_id)
        if lane is not None:
            lane.poke()


def cancel(turn_id: str) -> None:
    for lane in _lanes.values():
        if lane.request_cancel(turn_id):
            return


def native_reset() -> None:
    # Every lane looks at the native-reset mark when it wakes and renews its session between Turns.
    wake(list(_lanes))


async def deliver_pending_cancels() -> None:
    """Pass on every cancel the store says was asked for. A worker in split mode calls it now and
    then (``groupx_site/worker.py``): a cancel whose wake-up the channel layer lost (Redis
    restarted) still reaches its lane, late; the lanes re-read their queues themselves (D43, D45).
    Idempotent: a lane takes a cancel once."""
    if not _lanes:
        return
    for turn_id in await db.read(lifecycle.cancelling_turn_ids)():
        cancel(turn_id)


def request_restart(actor_id: str) -> None:
    """Restart one agent's CLI (agents/restart.py asks after its command commits). Nothing to do
    when this runtime does not run that agent."""
    lane = _lanes.get(actor_id)
    if lane is None:
        return
    task = asyncio.get_running_loop().create_task(lane.restart("restart"), name=f"restart:{actor_id}")
    _restarts.add(task)
    task.add_done_callback(_restart_done)


def _restart_done(task: asyncio.Task) -> None:
    _restarts.discard(task)
    if not task.cancelled() and task.exception() is not None:
        logger.error("agent restart failed", exc_info=task.exception())


def announce_starting() -> None:
    """Every live agent without a session yet is ``starting`` from the moment reads answer: health
    must not say ``stopped`` in the moments between the store opening and ``start`` reaching it
    (the lease claim and the stale-launch sweep come first)."""
    for agent in roster.live_agents():
        if agent.actor_id not in _lanes:
            health.update(agent.actor_id, status="starting")


async def start() -> None:
    if not _lanes:  # no session of this process holds a secret file yet: any there is a leftover
        secret_file.sweep(private_dir_path())
    await db.write(_close_stale_launches)()
    for agent in roster.live_agents():
        if agent.actor_id in _lanes:  # a start retried after a store fault (D24) keeps its lanes
            continue
        health.update(agent.actor_id, status="starting")
        lane = Lane(AgentSessions(agent))
        _lanes[agent.actor_id] = lane
        lane.start_session()
    starts = [lane.first_start for lane in _lanes.values() if lane.first_start is not None]
    if starts:
        # Each start is bounded by its own attempts and handshake timeout; past the wait, an agent
        # still starting keeps its own "starting" and the room opens without it.
        await asyncio.wait(starts, timeout=session_start_wait_seconds())
    await db.write(_recover_turns)()
    for lane in _lanes.values():
        if lane.task is None:
            lane.start()
    memory_scheduler.start()  # dated-memory rollups for due batches, those left pending included


async def stop() -> None:
    """Close lanes and sessions; write no event (a Turn cut off here is interrupted on restart)."""
    await memory_scheduler.stop()  # before the sessions: a rollup in flight closes its own CLI
    for task in list(_restarts):  # a restart cut off here is finished by the next start's recovery
        task.cancel()
    await asyncio.gather(*_restarts, return_exceptions=True)
    lanes = list(_lanes.values())
    _lanes.clear()
    for lane in lanes:
        await lane.stop()
    await asyncio.gather(*(lane.sessions.close() for lane in lanes), return_exceptions=True)


def lane(actor_id: str) -> Lane | None:
    return _lanes.get(actor_id)

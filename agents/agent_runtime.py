"""The agent runtime: restart recovery, one session and one FIFO lane per live agent, and what the
wake-ups from the web side do (they arrive over the channel layer: agents/channel_consumer.py)
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
from groupx_site.store import db
from memory import scheduler as memory_scheduler
from setup_wizard import roster
from turns import lifecycle

logger = logging.getLogger("groupx.runtime")

_lanes: dict[str, Lane] = {}
_stale_closed: set[str] = set()  # a start retried after a store fault keeps its new bindings
_room_jobs = False  # this runtime runs the room-wide jobs (D58): it recovered them, runs the scheduler
_restarts: set[asyncio.Task] = set()
ALL = None  # ``start``'s default: every live agent and the room-wide jobs, in one process


def _close_stale_launches(actor_ids: set[str] | None, room_jobs: bool) -> None:
    if actor_ids is None:  # the whole room: every stale binding, once per process
        if "*" in _stale_closed:
            return
        closed = instances.close_stale_launches()
        _stale_closed.add("*")
    else:
        fresh = actor_ids - _stale_closed
        closed = instances.close_stale_launches(only=fresh) if fresh else 0
        if room_jobs and "room" not in _stale_closed:  # the brain's, and any actor no agent lease covers
            closed += instances.close_stale_launches(besides=_live_agent_ids())
            _stale_closed.add("room")
        _stale_closed.update(fresh)
    if closed:
        logger.info("restart recovery: %s stale bindings closed", closed)


def _live_agent_ids() -> set[str]:
    return {agent.actor_id for agent in roster.live_agents()}


def _recover_turns(actor_ids: set[str] | None = ALL, room_jobs: bool = True) -> dict[str, int]:
    """The whole room's recovery (``actor_ids`` None), or that of the agents a worker just took and,
    with the room's lease, of the Turns no agent lease covers (D58)."""
    counts = {"requeued": 0, "cancelled": 0, "interrupted": 0, "failed": 0}
    if actor_ids is None:
        counts = lifecycle.recover_after_restart()
    elif actor_ids:
        counts = lifecycle.recover_after_restart(only=actor_ids)
    absent = 0
    if room_jobs:
        if actor_ids is not None:
            for key, count in lifecycle.recover_after_restart(besides=_live_agent_ids()).items():
                counts[key] += count
        absent = lifecycle.fail_queued_for_absent_agents(_live_agent_ids())
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


# ---- the wake-ups, called on the runtime's loop by its consumer on the channel layer (agents/channel_consumer.py)


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
    then (``groupx_site/split_worker.py``): a cancel whose wake-up the channel layer lost (Redis
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


def announce_starting(actor_ids: set[str] | None = ALL) -> None:
    """Every live agent (of ``actor_ids``) without a session yet is ``starting`` from the moment
    reads answer: health must not say ``stopped`` in the moments between the store opening and
    ``start`` reaching it (the lease claim and the stale-launch sweep come first)."""
    for agent in roster.live_agents():
        if agent.actor_id not in _lanes and (actor_ids is None or agent.actor_id in actor_ids):
            health.update(agent.actor_id, status="starting")


async def start(actor_ids: set[str] | None = ALL, *, room_jobs: bool = True) -> None:
    """Start the agents of ``actor_ids`` (every live agent: ``ALL``) with their restart recovery, and
    with ``room_jobs`` the room-wide ones. A worker calls it again for each lease it takes (D58);
    an agent already running here is left as it is."""
    global _room_jobs
    if actor_ids is None and not _lanes:  # no session of this process holds a secret file yet: any there is a leftover
        secret_file.sweep(private_dir_path())
    await db.write(_close_stale_launches)(actor_ids, room_jobs)
    for agent in roster.live_agents():
        if agent.actor_id in _lanes or (actor_ids is not None and agent.actor_id not in actor_ids):
            continue  # a start retried after a store fault (D24) keeps its lanes
        health.update(agent.actor_id, status="starting")
        lane = Lane(AgentSessions(agent))
        _lanes[agent.actor_id] = lane
        lane.start_session()
    starts = [
        lane.first_start for lane in _lanes.values() if lane.first_start is not None and not lane.first_start.done()
    ]
    if starts:
        # Each start is bounded by its own attempts and handshake timeout; past the wait, an agent
        # still starting keeps its own "starting" and the room opens without it.
        await asyncio.wait(starts, timeout=session_start_wait_seconds())
    await db.write(_recover_turns)(actor_ids if actor_ids is None else set(actor_ids), room_jobs and not _room_jobs)
    for lane in _lanes.values():
        if lane.task is None:
            lane.start()
    if room_jobs:
        _room_jobs = True
        memory_scheduler.start()  # dated-memory rollups for due batches, those left pending included


async def stop_agents(actor_ids: set[str]) -> None:
    """A worker lost these agents' leases (D58): they stop at once, the rest run on."""
    lanes = [_lanes.pop(actor_id) for actor_id in actor_ids if actor_id in _lanes]
    for lane in lanes:
        await lane.stop()
    await asyncio.gather(*(lane.sessions.close() for lane in lanes), return_exceptions=True)
    for actor_id in actor_ids:
        health.update(actor_id, status="stopped")


def running_agents() -> set[str]:
    return set(_lanes)


async def stop() -> None:
    """Close lanes and sessions; write no event (a Turn cut off here is interrupted on restart)."""
    global _room_jobs
    _room_jobs = False
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

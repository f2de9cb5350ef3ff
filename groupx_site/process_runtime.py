"""The one runtime of a GroupX process: started once, after the HTTP port is bound.

"After the bind" matters: restart recovery and session start write to the store and touch
bindings, and a second ``groupx start`` that loses the port race must not. Daphne runs its reactor
(and so ``callWhenRunning``) only after a successful listen; a request proves the bind too.

Startup order (FEATURES §7, docs/DECISIONS.md D42), after the bind: the integrity check and the
migrations; then requests are admitted (reads answer, writes get 503 ``SESSION_NOT_AVAILABLE``
until readiness); then stale-state recovery, the agents' sessions, Broker (Turn) recovery, the
lanes and dated-memory recovery (``agents/agent_runtime.py``); then readiness.

Three roles (docs/DECISIONS.md D45): the embedded default runs the agents here and records itself as
the lease's owner (the port bind is the lease); a web process of split mode (groupx.json names a
Redis channel layer) never starts an agent session, and its readiness is its store's; a worker
(``manage.py runworker groupx-agents``, ``groupx_site/split_worker.py``) holds the lease row and runs the
agents.
Nothing here may hold a database transaction across an ``await``: ORM work runs in
``sync_to_async`` functions.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sys

from django.conf import settings

from agents.drivers import process
from agents.lease_keeper import LeaseKeeper
from groupx_site import room_conditions
from groupx_site.core import process_state
from groupx_site.speedups import one_cpu, wal_checkpoints
from groupx_site.speedups import switches as speedups_switches
from groupx_site.store import db, layer, store_faults, store_integrity
from rooms import bus, search_index, system_errors
from setup_wizard import roster

logger = logging.getLogger("groupx.runtime")

_started: asyncio.Future | None = None
_admitted: asyncio.Event | None = None  # set once requests may come in (see wait_for_store)
_stopped: asyncio.Future | None = None
_migrate_first = False
_keeper: LeaseKeeper | None = None  # set by the worker before it starts; the embedded role makes its own
_holdings_lock = asyncio.Lock()  # a worker starts and stops what its leases say one change at a time
_room_jobs_started = False
WRITES_DRAIN_SECONDS = 2.0  # at most this long (or the close timeout) a stop waits for admitted writes (D91)


def split_mode() -> bool:
    """groupx.json names a Redis channel layer: the agents run in a worker process, not here."""
    return settings.GROUPX_CONFIG.channelLayer is not None


def run_as_worker(keeper: LeaseKeeper) -> None:
    """This process is the agents' worker and already holds the lease through ``keeper``."""
    global _keeper
    _keeper = keeper


def _is_worker() -> bool:
    """This process is an agents' worker (``manage.py runworker groupx-agents``)."""
    return _keeper is not None and _keeper.me.mode == "worker"


def _held_agents() -> set[str] | None:
    """The agents this process runs: a worker's, those it holds the leases of (D58); else all."""
    return set(_keeper.holdings.agents) if _is_worker() else None


def runs_agents() -> bool:
    """Whether this process runs the agents: a worker, or the embedded default."""
    return _keeper is not None or not split_mode()


async def stop_agents_after_lease_lost() -> None:
    """Another process owns the agents now: ours stop at once and this process is not ready. It
    says so: health and the refused writes name the process that took over, and the room gets one
    ``system.error`` (D89, D90)."""
    from agents import agent_runtime
    from assistant import brain_runtime

    owner = await _room_owner_now()
    process_state.supersede(owner)
    process_state.set_readiness("failed")
    await brain_runtime.stop()  # the brain goes with the agents (the new owner starts its own)
    await agent_runtime.stop()
    await _say_lease_lost(owner)


async def _room_owner_now() -> dict | None:
    """The live owner of the room's lease as the store says, unless it is this process."""
    from agents import lease

    try:
        owner = (await db.read(lease.describe)())["owner"]
    except store_faults.StoreUnavailable:
        return None
    if owner is not None and _keeper is not None and owner["workerId"] == _keeper.me.worker_id:
        return None
    return owner


async def _say_lease_lost(owner: dict | None) -> None:
    if _keeper is None:
        return
    me = _keeper.me
    taker = (
        f"GroupX process {owner['pid']} on {owner['host']} took the room over"
        if owner
        else "its lease was not renewed in time"
    )
    message = f"GroupX process {me.pid} on {me.host} ({me.mode}) stopped its agents: {taker}."
    try:
        await db.write(system_errors.report)(f"lease.lost:{me.worker_id}", "SESSION_NOT_AVAILABLE", message)
    except store_faults.StoreUnavailable as fault:
        logger.warning("the lost lease could not be made public: %s", fault.message)


async def _start_agents() -> None:
    global _keeper
    from agents import agent_runtime
    from assistant import brain_runtime

    if not runs_agents():
        logger.info("split mode: this web process starts no agent session; a worker runs them")
        await brain_runtime.start_remote()  # the side chat asks the worker's brain (D55)
        return
    if _keeper is None:  # the embedded default: the bound port is the lease, recorded as its owner
        from agents import channel_consumer

        keeper = LeaseKeeper(
            "embedded", on_lost=stop_agents_after_lease_lost, wanted=[agent.actor_id for agent in roster.live_agents()]
        )
        await keeper.claim()  # a store fault here is retried with the whole start (D24)
        keeper.keep()
        _keeper = keeper
        await channel_consumer.start_in_process()  # the wake-ups reach the runtime through it (D43); idempotent
    elif _keeper.me.mode == "worker":
        await _run_holdings(_keeper.holdings)
        return
    await agent_runtime.start()
    await brain_runtime.start()  # the brain starts in the background (FEATURES §13)


async def apply_holdings(holdings) -> None:
    """A worker's keeper took an agent's lease, the room's, or lost an agent's (D58): start or stop
    them, after the runtime's own start (which runs what was held then)."""
    await ensure_started()
    await _run_holdings(holdings)


async def _run_holdings(holdings) -> None:
    global _room_jobs_started
    from agents import agent_runtime
    from assistant import brain_runtime

    async with _holdings_lock:
        running = agent_runtime.running_agents()
        if lost := running - holdings.agents:
            logger.warning("this worker no longer holds %s: they stop now", ", ".join(sorted(lost)))
            await agent_runtime.stop_agents(lost)
        taken = set(holdings.agents) - running
        room_taken = holdings.room and not _room_jobs_started
        if not taken and not room_taken:
            return
        whole = {agent.actor_id for agent in roster.live_agents()} <= holdings.agents
        if room_taken and whole and not running:  # the whole room, as one process has always started it
            await agent_runtime.start()
        else:
            await agent_runtime.start(taken, room_jobs=holdings.room)
        if room_taken:
            _room_jobs_started = True
            await brain_runtime.start()  # the brain runs where the room-wide jobs run (D55, D58)


def migrate_before_start() -> None:
    """``groupx start`` applies pending migrations itself, but only here, once it holds the port:
    the port is the single-runtime lease, and a process that loses the race must write nothing."""
    global _migrate_first
    _migrate_first = True


def _prepare_store() -> None:
    from django.db import connection

    from agents.actor_rows import sync_actors

    db.leave_checkpoints_to_their_thread()  # a worker's writer connection is open already (its lease, D67)
    with connection.cursor() as cursor:
        store_integrity.refuse_newer_migrations(cursor)  # before migrate writes anything
    if _migrate_first:
        from django.core.management import call_command

        call_command("migrate", interactive=False, verbosity=0)
    with connection.cursor() as cursor:
        store_integrity.refuse_newer_schema(cursor)  # a newer GroupX's database is never written to
    sync_actors()


async def _start() -> None:
    """Start, and while the store is at fault (a read-only or full disk, a lock another process
    holds) wait and start again: readiness stays ``starting``, health says when the next try is
    (docs/DECISIONS.md D24). Any other failure is final, as before."""
    if speedups_switches.is_on("threadsOnOneCpu"):  # before the threads below start (D83)
        cpu = one_cpu.keep_threads_on_one_cpu()
        if cpu is not None:
            process.also_in_each_child(one_cpu.restore_in_child)  # each CLI gets every CPU back
            logger.info("GroupX's threads run on CPU %s; the agents' CLIs on any", cpu)
    layer.bind(asyncio.get_running_loop())  # wake-ups and the bus leave this process from here (D43)
    bus.start_relay(hear_others=not _is_worker())  # a worker serves no stream nor MCP wait (D59)
    wal_checkpoints.start(
        db.run_on_writer_thread
    )  # before the writer's first connection, which then leaves them to it (D67)
    backoff = store_faults.Backoff()
    while True:
        try:
            await asyncio.to_thread(store_integrity.check_at_start)  # the file as we found it
            await db.write(_prepare_store)()
            await asyncio.to_thread(store_integrity.check_at_start)  # a fresh store, just created
            if runs_agents():
                from agents import agent_runtime

                agent_runtime.announce_starting(_held_agents())
            _admitted.set()  # the tables exist: reads answer while the agents start, writes get 503
            await _start_agents()
            break
        except store_faults.StoreUnavailable as fault:
            delay = backoff.next_delay()
            process_state.start_attempt_failed(fault.code, fault.message, delay)
            _admitted.set()
            logger.warning("GroupX runtime could not start (%s); trying again in %.1f s", fault.message, delay)
            await asyncio.sleep(delay)
        except Exception as error:
            process_state.start_attempt_failed("INTERNAL_ERROR", str(error)[:256], None)
            process_state.set_readiness("failed")
            _admitted.set()
            if isinstance(error, store_integrity.NewerMigrations | store_integrity.NewerSchema):
                if not _migrate_first:  # `groupx start` (serve.py) says it itself, in one line
                    logger.error("GroupX refused the database: %s", error)
            else:
                logger.exception("GroupX runtime failed to start")
            raise
    search_index.start()  # the messages since the last batch first, then about once a second (D80)
    if process_state.readiness() == "starting":  # a stop that began meanwhile stays "closing"
        process_state.set_readiness("ready")
    if not _is_worker():  # the processes that serve the room keep its failures public (D89)
        room_conditions.watcher.start()
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
    global _started, _admitted
    if _started is None:  # no await between the check and the assignment: one start per process
        _admitted = asyncio.Event()
        _started = asyncio.ensure_future(_start())
        _started.add_done_callback(lambda f: f.cancelled() or f.exception())  # _start logs its failure
    return _started


async def ensure_started() -> None:
    started = begin_start()
    if not started.done():
        await asyncio.shield(started)


async def wait_for_store() -> None:
    """For requests: wait until the store is migrated, not for the agents' sessions and not
    through the start's retries. While the agents start (D42) or the start waits for the store
    (D24), health and reads answer and writes get 503 from the readiness check, instead of every
    request hanging until the start is over."""
    started = begin_start()
    if not started.done():
        await _admitted.wait()
    # After a final failure requests still come in: health says why, writes get 503 from the
    # readiness check (D42), rather than every request ending in a bare 500.


def schedule_start() -> None:
    task = asyncio.get_event_loop().create_task(ensure_started())
    task.add_done_callback(lambda t: t.cancelled() or t.exception())  # _start logged its failure already


async def _stop() -> None:
    from agents import agent_runtime, channel_consumer
    from assistant import brain_runtime

    process_state.set_readiness("closing")  # no new write is admitted from here (groupx_site/middleware.py)
    # PROTOCOL §10.8: the REST writes already admitted finish first (bounded), so none reaches
    # the writer once the lanes and sessions below begin to close. A write takes milliseconds; the
    # bound keeps a long one (a side-chat message awaiting the brain) inside `groupx stop`'s budget.
    bound = min(WRITES_DRAIN_SECONDS, settings.GROUPX_CONFIG.timeouts.closeMs / 1000)
    if not await process_state.wait_for_writes_in_flight(bound):
        logger.warning(
            "%d REST writes still running after %.1f s; closing the runtime anyway",
            process_state.writes_in_flight(),
            bound,
        )
    for mcp_server in ("agents.mcp.server", "assistant.mcp.server"):
        # imported by the first /mcp request only (groupx_site/asgi.py): nothing to stop before
        if (loaded := sys.modules.get(mcp_server)) is not None:
            await loaded.stop()
    await brain_runtime.stop()
    await channel_consumer.stop_in_process()
    await agent_runtime.stop()
    if _keeper is not None:
        await _keeper.release()
    await room_conditions.watcher.stop()
    await bus.stop_relay()
    await search_index.stop()
    await asyncio.to_thread(wal_checkpoints.stop)  # its last pass cuts the WAL (D67)


async def shutdown() -> None:
    """The protocol's order: MCP handlers, then agent sessions; the listener is released last by
    the server itself. Idempotent: the shutdown endpoint and daphne's "before shutdown" trigger
    both call it."""
    global _stopped
    if _stopped is None:
        _stopped = asyncio.ensure_future(_stop())
    await asyncio.shield(_stopped)

"""The agents' worker of split mode: ``manage.py runworker groupx-agents`` (docs/ARCHITECTURE.md
"Channels: the layer and the two modes", docs/DECISIONS.md D45).

Channels' worker would create the ``groupx-agents`` consumer on its first message; ours creates it
at once (it joins its groups before any web process wakes it), then stands by for the lease and,
once it holds it, runs the agents: sessions, lanes, schedulers and restart recovery
(``groupx_site/process_runtime.py`` in its worker role). With ``--agents`` it runs only the agents named
whose leases it holds, and the room-wide jobs when it holds the room's lease (D58); every worker
hears every wake-up on the group ``groupx.agents`` and each acts for the lanes it has. While it runs it reads the cancels asked for now
and then (``agents.agent_runtime.deliver_pending_cancels``; the lanes re-read their queues), so a
wake-up the channel layer lost delays a cancel, never strands it. It stops its agents at once when
it loses the lease, and on SIGTERM/SIGINT it closes them, releases the lease and ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal

from channels.worker import Worker

from agents import agent_runtime, channel_consumer
from agents.lease_keeper import LeaseKeeper
from groupx_site import process_runtime
from groupx_site.store import layer
from groupx_site.store.store_faults import Backoff, StoreUnavailable
from setup_wizard import roster

logger = logging.getLogger("groupx.worker")

AGENTS_CHANNEL = layer.AGENTS_CHANNEL  # "groupx-agents"
CANCEL_RECHECK_SECONDS = 1.0  # and the consumers' check; GROUPX_WORKER_POLL_MS overrides it


def cancel_recheck_seconds() -> float:
    return int(os.environ.get("GROUPX_WORKER_POLL_MS", CANCEL_RECHECK_SECONDS * 1000)) / 1000


class LeaseLostError(RuntimeError):
    pass


class AgentsWorker(Worker):
    """Channels' worker, plus the agents when it listens on ``groupx-agents``. It serves channels
    only, so it routes them with the channel router itself (the ``channel`` entry of the ASGI
    router is the same one) rather than the whole ASGI application."""

    lost_lease = False
    keeper: LeaseKeeper | None = None

    def __init__(self, application, channels, channel_layer, max_applications=1000, agents: list[str] | None = None):
        super().__init__(channel_consumer.channel_router, channels, channel_layer, max_applications)
        self.agents = agents  # the actor ids of ``--agents``; None: every live agent

    def _ensure_consumers(self) -> None:
        """Every consumer exists (one that a layer fault ended is made again) and the agents' one
        is in the wake-ups' group: the join goes straight into our own consumer, not through the
        named channel, where another worker of the room could take it (agents/channel_consumer.py). Joining
        again is harmless and needed: a restarted Redis has forgotten every group."""
        for channel in self.channels:
            details = self.application_instances.get(channel)
            if details is not None and details["future"].done():
                self.application_instances.pop(channel, None)
            inbox = self.get_or_create_application_instance(channel, {"type": "channel", "channel": channel})
            if channel == AGENTS_CHANNEL:
                inbox.put_nowait({"type": "agents.join"})

    async def _keep_consumers(self) -> None:
        while True:
            self._ensure_consumers()
            await asyncio.sleep(cancel_recheck_seconds())  # a period, not a synchronisation

    async def listener(self, channel: str) -> None:
        """Channels' listener, which ends at the first layer error; ours waits and listens again
        (Redis restarted: a wake-up lost meanwhile only delays, D43)."""
        backoff = Backoff()
        while True:
            try:
                await super().listener(channel)
            except Exception as error:  # noqa: BLE001 - the layer's connection errors have no common type
                delay = backoff.next_delay()
                logger.warning("channel %s: the layer failed (%s); listening again in %.1f s", channel, error, delay)
                await asyncio.sleep(delay)

    async def application_exception(self, exception, application_details) -> None:
        logger.warning("a consumer ended on a layer error (%s); it is made again", exception)

    async def handle(self) -> None:
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stopping.set)
        tasks = [
            asyncio.ensure_future(self._keep_consumers()),
            asyncio.ensure_future(super().handle()),
            asyncio.ensure_future(stopping.wait()),
        ]
        if AGENTS_CHANNEL in self.channels:
            tasks.append(asyncio.ensure_future(self._serve_agents()))
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        logger.info("the worker stops")
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        if not self.lost_lease:
            await process_runtime.shutdown()  # closes the CLIs and releases the lease
        if self.keeper is not None:
            await self.keeper.release()  # a standby leaves the rows too (doctor and health list it no more)
        logger.info("the worker stopped: its agents are closed and its lease released")
        for task in done:
            task.result()  # a listener's error ends the worker with it

    async def _serve_agents(self) -> None:
        lost = asyncio.Event()

        async def on_lost() -> None:
            self.lost_lease = True
            await process_runtime.stop_agents_after_lease_lost()
            lost.set()

        if not process_runtime.split_mode():
            logger.warning(
                "groupx.json names no channelLayer.redisUrl: no web process can wake this worker "
                "(the embedded default, `groupx start`, runs the agents itself)"
            )
        wanted = self.agents if self.agents is not None else [agent.actor_id for agent in roster.live_agents()]
        keeper = self.keeper = LeaseKeeper(
            "worker", on_lost=on_lost, wanted=wanted, on_change=process_runtime.apply_holdings
        )
        await keeper.acquire()  # a standby waits here
        process_runtime.run_as_worker(keeper)
        keeper.keep()
        await process_runtime.ensure_started()
        while not lost.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(lost.wait(), timeout=cancel_recheck_seconds())
            if not lost.is_set():
                with contextlib.suppress(StoreUnavailable):  # the lanes wait for the store themselves
                    await agent_runtime.deliver_pending_cancels()
        raise LeaseLostError("this worker lost the lease of the room's agents to another worker; its agents stopped")

"""The agent runtime's consumer on the channel layer (docs/DECISIONS.md D43).

The web side never calls the runtime: after a commit it sends a message to the group
``groupx.agents`` (``groupx_site/store/layer.py``): ``agents.wake`` {actorIds} (new work),
``agents.cancel`` {turnId}, ``agents.restart`` {actorId}, ``agents.native_reset``. ``AgentsConsumer``
receives them and calls the runtime (``agents/agent_runtime.py``) on the runtime's own loop.

It is served by a Channels worker for the channel ``groupx-agents`` through ``channel_router`` (the
``channel`` entry of the ASGI router): in the embedded default a ``channels.worker.Worker`` on the
server's own loop, started with the runtime (``start_in_process``); in split mode
``manage.py runworker groupx-agents``. One path serves both modes. A Channels worker creates the
consumer when the first message reaches its channel, so ``start_in_process`` sends one
(``agents.join``) and the consumer joins the group then.

A lost wake-up only delays: the lanes read their queue from the table (and, on a shared layer,
look again at an interval; ``agents/lanes.py``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from channels.consumer import AsyncConsumer, get_handler_name
from channels.routing import ChannelNameRouter
from channels.worker import Worker

from agents import agent_runtime
from groupx_site.store import layer

logger = logging.getLogger("groupx.runtime")


class AgentsConsumer(AsyncConsumer):
    async def dispatch(self, message: dict[str, Any]) -> None:
        # Not Channels' dispatch: that one closes the thread's old database connections through a
        # thread hop before every message, and the runtime's database work runs on its own
        # threads (groupx_site/store/db.py). A message of an unknown type (a newer web process)
        # or a failing handler must not end the consumer, whose instance holds the group.
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            logger.warning("agents consumer: no handler for %r", message.get("type"))
            return
        try:
            await handler(message)
        except Exception:
            logger.exception("agents consumer: %s failed", message.get("type"))

    async def agents_join(self, message: dict[str, Any]) -> None:
        await self.channel_layer.group_add(layer.AGENTS_GROUP, self.channel_name)
        joined = _joined_events.get(str(message.get("joined")))
        if joined is not None:  # join_group waits for this
            joined.set()

    async def agents_wake(self, message: dict[str, Any]) -> None:
        agent_runtime.wake([str(actor_id) for actor_id in message.get("actorIds") or ()])

    async def agents_cancel(self, message: dict[str, Any]) -> None:
        agent_runtime.cancel(str(message["turnId"]))

    async def agents_restart(self, message: dict[str, Any]) -> None:
        agent_runtime.request_restart(str(message["actorId"]))

    async def agents_native_reset(self, message: dict[str, Any]) -> None:
        agent_runtime.native_reset()


channel_router = ChannelNameRouter({layer.AGENTS_CHANNEL: AgentsConsumer.as_asgi()})


class _QuietWorker(Worker):
    # The base class looks for finished consumer instances ten times a second; ours is one
    # long-lived instance whose handlers never raise.
    application_checker_interval = 5.0


JOIN_WAIT_SECONDS = 5.0

_served: tuple[Worker, asyncio.Task] | None = None
_joined_events: dict[str, asyncio.Event] = {}


async def start_in_process() -> None:
    """Serve ``groupx-agents`` on this loop and return once the consumer has joined the group, so
    that no wake-up of the start-up is sent to an empty group."""
    global _served
    if _served is not None:
        return
    channel_layer = layer.channel_layer()
    worker = _QuietWorker(channel_router, [layer.AGENTS_CHANNEL], channel_layer)
    _served = worker, asyncio.get_running_loop().create_task(worker.arun(), name="groupx-agents-worker")
    await join_group(channel_layer)


async def join_group(channel_layer) -> None:
    """Make the worker's consumer exist and join ``groupx.agents`` (``manage.py runworker`` needs
    this too: it creates the consumer on the first message only). Bounded: on a shared layer
    another worker may take the message (it joins then); a wake-up lost meanwhile only delays."""
    token = layer.PROCESS_ID
    joined = _joined_events[token] = asyncio.Event()
    try:
        await channel_layer.send(layer.AGENTS_CHANNEL, {"type": "agents.join", "joined": token})
        await asyncio.wait_for(joined.wait(), JOIN_WAIT_SECONDS)
    except Exception as error:  # a timeout, or the layer unreachable
        logger.warning("agents consumer: not confirmed in the group %s (%r)", layer.AGENTS_GROUP, error)
    finally:
        _joined_events.pop(token, None)


async def stop_in_process() -> None:
    global _served
    if _served is None:
        return
    (worker, task), _served = _served, None
    task.cancel()
    instances = [details["future"] for details in worker.application_instances.values()]
    for instance in instances:  # the Worker does not stop the consumers it started
        instance.cancel()
    await asyncio.gather(task, *instances, return_exceptions=True)

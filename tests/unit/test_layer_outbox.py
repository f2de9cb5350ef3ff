"""What a process sends on the channel layer (groupx_site/store/layer.py, rooms/bus.py; D59).

In split mode each send to Redis is on its way for a while, on a busy loop. The agents' wake-ups
must not wait behind the bus's commits, and the bus's commits and deltas that come while one message
is on its way must leave together in the next one, not one message each, each behind the last.
The layer here is Channels' in-memory layer, whose ``group_send`` the test holds open when it
wants a send on its way.
"""

from __future__ import annotations

import asyncio

import pytest
from channels.layers import InMemoryChannelLayer

from groupx_site.store import layer
from rooms import bus


class HeldLayer(InMemoryChannelLayer):
    """Records each ``group_send`` and, while ``hold`` is set, keeps it open until released."""

    def __init__(self, **config):
        super().__init__(**config)
        self.sent: list[tuple[str, dict]] = []
        self.hold = False
        self.entered: asyncio.Event | None = None
        self.released: asyncio.Event | None = None
        self.counted: dict[int, asyncio.Event] = {}

    async def group_send(self, group, message):
        self.sent.append((group, message))
        for count, reached in self.counted.items():
            if len(self.sent) >= count:
                reached.set()
        if self.hold:
            self.entered.set()
            await self.released.wait()

    async def sends(self, count: int) -> None:
        """Return once ``count`` messages were handed to the layer."""
        reached = self.counted.setdefault(count, asyncio.Event())
        if len(self.sent) >= count:
            reached.set()
        await asyncio.wait_for(reached.wait(), 10)


@pytest.fixture
def held_layer(settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": f"{__name__}.HeldLayer"}}
    yield
    layer.bind(None)
    layer._outboxes.clear()
    bus._outgoing.clear()


def run(main) -> None:
    async def bound():
        layer.bind(asyncio.get_running_loop())
        channel_layer = layer.channel_layer()
        channel_layer.entered, channel_layer.released = asyncio.Event(), asyncio.Event()
        await main(channel_layer)

    asyncio.run(bound())


def bus_items(message: dict) -> list:
    return [item[1] for item in message["items"]]


def test_a_wake_up_of_the_agents_leaves_before_the_commits_queued_with_it(held_layer):
    async def main(held):
        bus._send_to_other_processes(["c", 1, b"frame 1"])  # the POST's commit reaches the bus first
        layer.send_soon(layer.AGENTS_GROUP, {"type": "agents.wake", "actorIds": ["agent:a"]})
        await held.sends(2)
        assert [group for group, _ in held.sent] == [layer.AGENTS_GROUP, bus.BUS_GROUP]

    run(main)


def test_the_bus_items_that_come_while_a_message_is_on_its_way_leave_together_in_the_next(held_layer):
    async def main(held):
        held.hold = True
        bus._send_to_other_processes(["c", 1, b"frame 1"])
        await held.entered.wait()  # the first message is on its way
        bus._send_to_other_processes(["c", 2, b"frame 2"])
        await asyncio.sleep(0)  # a loop iteration between two commits (not a wait for time)
        bus._send_to_other_processes(["t", {"type": "turn.content.delta", "body": {}}])
        await asyncio.sleep(0)
        bus._send_to_other_processes(["c", 3, b"frame 3"])
        held.hold = False
        held.released.set()
        await held.sends(2)
        await asyncio.sleep(0)  # nothing else is on its way: a third message would be queued by now
        assert [bus_items(message) for _, message in held.sent] == [
            [1],
            [2, {"type": "turn.content.delta", "body": {}}, 3],
        ]

    run(main)


def test_a_message_dropped_before_the_loop_is_bound_does_not_stop_the_bus_sending_later(held_layer):
    layer.bind(None)
    bus._send_to_other_processes(["c", 1, b"frame 1"])  # nobody to send to yet: dropped

    async def main(held):
        bus._send_to_other_processes(["c", 2, b"frame 2"])
        await held.sends(1)
        assert [bus_items(message) for _, message in held.sent] == [[2]]

    run(main)

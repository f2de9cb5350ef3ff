"""Two small gates of the runtime: the launches under way at once (``agents/sessions.py``, D92)
and the REST writes a stop waits for (``groupx_site/core/process_state.py``, D91)."""

from __future__ import annotations

import asyncio

import pytest

from agents import sessions
from groupx_site.core import process_state


@pytest.fixture
def two_slots(monkeypatch):
    monkeypatch.setattr(sessions, "LAUNCH_SLOTS", 2)
    monkeypatch.setattr(sessions, "_launch_slots", None)


def test_no_more_launches_than_slots_run_at_once_and_each_gives_its_slot_back(two_slots):
    async def scenario():
        inside, most, release = 0, 0, asyncio.Event()

        async def launch():
            nonlocal inside, most
            async with sessions.launch_slot():
                inside += 1
                most = max(most, inside)
                await release.wait()
                inside -= 1

        tasks = [asyncio.create_task(launch()) for _ in range(5)]
        while inside < 2:
            await asyncio.sleep(0)
        release.set()
        await asyncio.gather(*tasks)
        return most

    assert asyncio.run(scenario()) == 2


def test_a_launch_hanging_past_its_slot_time_lets_the_next_one_start(two_slots, monkeypatch):
    monkeypatch.setattr(sessions, "LAUNCH_SLOT_SECONDS", 0.01)

    async def scenario():
        hang = asyncio.Event()

        async def hanging():
            async with sessions.launch_slot():
                await hang.wait()

        hangers = [asyncio.create_task(hanging()) for _ in range(2)]
        async with sessions.launch_slot():  # gets in although both hangers still hold theirs
            started = True
        hang.set()
        await asyncio.gather(*hangers)
        return started

    assert asyncio.run(scenario()) is True


def test_a_stop_waits_for_the_writes_in_flight_and_gives_up_after_its_bound():
    async def scenario():
        done = asyncio.Event()

        async def write():
            with process_state.write_in_flight():
                await done.wait()

        task = asyncio.create_task(write())
        while process_state.writes_in_flight() == 0:
            await asyncio.sleep(0)
        gave_up = await process_state.wait_for_writes_in_flight(0.01)
        done.set()
        finished = await process_state.wait_for_writes_in_flight(5)
        await task
        return gave_up, finished, process_state.writes_in_flight()

    assert asyncio.run(scenario()) == (False, True, 0)

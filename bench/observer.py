"""One SSE connection that watches the room for the latency and throughput workloads.

It decodes durable frames and records when each agent reply and each terminal event arrived, so a
workload can wait for "the reply to my message" or "a terminal of agent X" with a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter

from bench import sse

TERMINALS = {"turn.completed", "turn.failed", "turn.cancelled", "turn.interrupted"}


class Observer:
    def __init__(self, base_url: str, after_seq: int):
        self.base_url, self.after_seq = base_url, after_seq
        self.replies: dict[str, float] = {}  # replyToEventId of an agent's message.created → arrival
        self.terminals: dict[str, tuple[str, float]] = {}  # turnId → (terminal type, arrival)
        self.terminals_by_agent: Counter[str] = Counter()
        self.turn_steps: dict[tuple[str, str], float] = {}  # (turnId, event type) → arrival
        self.head = after_seq
        self.connected = asyncio.Event()
        self._changed = asyncio.Condition()
        self._client = sse.stream_client(1)
        self._task: asyncio.Task | None = None

    async def __aenter__(self) -> Observer:
        self._task = asyncio.create_task(self._read())
        await asyncio.wait_for(self.connected.wait(), 10)
        return self

    async def __aexit__(self, *exc) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
        await self._client.aclose()

    async def _read(self) -> None:
        async for frame in sse.frames(self._client, self.base_url, after_seq=self.after_seq):
            self.connected.set()  # the first frame is the ": open" comment
            if frame.seq is None or frame.data is None:
                continue
            self.head = frame.seq
            event = json.loads(frame.data)
            turn_id = event["body"].get("turnId")
            if turn_id:
                self.turn_steps.setdefault((turn_id, event["type"]), frame.at)
            if event["type"] == "message.created" and event["actor"]["kind"] == "agent":
                self.replies[event.get("replyToEventId")] = frame.at
            elif event["type"] in TERMINALS:
                self.terminals[event["body"]["turnId"]] = (event["type"], frame.at)
                self.terminals_by_agent[event["to"][0]] += 1
            async with self._changed:
                self._changed.notify_all()

    async def until(self, predicate, timeout: float) -> None:
        """Wait until ``predicate()`` holds; TimeoutError after ``timeout`` seconds."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(predicate), timeout)

"""Latency: sequential messages to one agent, POST → 202 and POST → the agent's reply on SSE.

One message at a time, so each figure is a full round trip through the write path, the lane, the
fake CLI and the SSE tail with nothing queued ahead. A few warm-up messages are not counted: the
first turns of a fresh process pay imports and cold caches once.
"""

from __future__ import annotations

import time
import uuid

import httpx

from bench.observer import Observer
from bench.stats import summary_ms

STEPS = ("turn.queued", "turn.dispatched", "turn.started", "turn.completed")


async def run(
    base_url: str, *, messages: int = 50, warmup: int = 3, target: str = "agent:kimi", content: str = ""
) -> dict:
    """``content``: a prefix of each message (a fake agent's directive, e.g. to stream deltas)."""
    async with httpx.AsyncClient(base_url=base_url, timeout=10) as client:
        head = (await client.get("/api/bootstrap")).json()["room"]["throughSeq"]
        accepted, replied = [], []
        steps: dict[str, list[float]] = {step: [] for step in STEPS}
        async with Observer(base_url, head) as room:
            for index in range(warmup + messages):
                body = {"clientCommandId": f"lat-{uuid.uuid4()}", "to": [target], "content": f"{content}ping {index}"}
                started = time.perf_counter()
                response = await client.post("/api/messages", json=body)
                accepted_at = time.perf_counter()
                response.raise_for_status()
                message_id = response.json()["messageEventId"]
                turn_id = response.json()["turns"][0]["turnId"]
                await room.until(lambda m=message_id: m in room.replies, timeout=10)
                if index >= warmup:
                    accepted.append(accepted_at - started)
                    replied.append(room.replies[message_id] - started)
                    for step in STEPS:
                        if (turn_id, step) in room.turn_steps:
                            steps[step].append(room.turn_steps[turn_id, step] - started)
    return {
        "messages": messages,
        "warmup": warmup,
        "target": target,
        "postToAcceptedMs": summary_ms(accepted),
        "postToReplyMs": summary_ms(replied),
        # where the round trip goes: POST → each durable step of the turn, as seen on SSE
        "postToStepMs": {step: summary_ms(times)["p50"] if times else None for step, times in steps.items()},
    }

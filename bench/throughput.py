"""Throughput: many messages to three agents as fast as the server accepts them.

One sender per agent posts its share back to back (messages round-robin over the agents, one
target each, so N messages make N turns). A full queue (429 QUEUE_CAPACITY_REACHED, 64 unfinished
turns per agent) is not an error: the sender waits for one of that agent's turns to end and
retries the same command. Turns per second run from the first POST to the last terminal event
seen on SSE.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import httpx

from bench.observer import Observer
from bench.stats import summary_ms

MAX_RETRIES = 1_000  # per sender: a bound, not an expectation


async def run(base_url: str, *, messages: int = 200, agents=("agent:kimi", "agent:hermes", "agent:grok")) -> dict:
    async with httpx.AsyncClient(
        base_url=base_url, timeout=30, limits=httpx.Limits(max_connections=len(agents))
    ) as client:
        head = (await client.get("/api/bootstrap")).json()["room"]["throughSeq"]
        async with Observer(base_url, head) as room:
            turn_ids: list[str] = []
            accept_times: list[float] = []
            rejected = 0

            async def sender(agent: str, count: int) -> None:
                nonlocal rejected
                retries = 0
                for index in range(count):
                    body = {"clientCommandId": f"tp-{uuid.uuid4()}", "to": [agent], "content": f"work {index}"}
                    while True:
                        seen = room.terminals_by_agent[agent]
                        started = time.perf_counter()
                        response = await client.post("/api/messages", json=body)
                        if response.status_code == 202:
                            accept_times.append(time.perf_counter() - started)
                            turn_ids.extend(t["turnId"] for t in response.json()["turns"])
                            break
                        code = response.json().get("error", {}).get("code")
                        if response.status_code != 429 or code != "QUEUE_CAPACITY_REACHED" or retries >= MAX_RETRIES:
                            raise RuntimeError(f"POST failed: {response.status_code} {response.text[:200]}")
                        rejected, retries = rejected + 1, retries + 1
                        await room.until(lambda a=agent, s=seen: room.terminals_by_agent[a] > s, timeout=30)

            shares = [messages // len(agents) + (1 if i < messages % len(agents) else 0) for i in range(len(agents))]
            first_post = time.perf_counter()
            await asyncio.gather(*(sender(agent, n) for agent, n in zip(agents, shares, strict=True)))
            all_accepted = time.perf_counter()
            await room.until(lambda: all(t in room.terminals for t in turn_ids), timeout=120)
            ends = [room.terminals[t] for t in turn_ids]
    last = max(at for _, at in ends)
    elapsed = last - first_post
    return {
        "messages": messages,
        "turns": len(turn_ids),
        "agents": list(agents),
        "completed": sum(kind == "turn.completed" for kind, _ in ends),
        "failed": sum(kind == "turn.failed" for kind, _ in ends),
        "otherTerminal": sum(kind not in ("turn.completed", "turn.failed") for kind, _ in ends),
        "queueFullRetries": rejected,
        "secondsToAllAccepted": round(all_accepted - first_post, 3),
        "secondsToLastTerminal": round(elapsed, 3),
        "turnsPerSecond": round(len(turn_ids) / elapsed, 1),
        "postToAcceptedMs": summary_ms(accept_times),
    }

"""Part 4 of ``python -m bench.floor``: the pipe floor, the server-side CPU of one prompt round trip
of ACP's JSON-RPC with the side-by-side kit's instant fake agent (``bench/anchor/fake_acp_agent.py``)
over asyncio subprocess pipes, as little code as the exchange allows.

``initialize`` and ``session/new`` once; then per Turn the messages a Turn exchanges: the
``session/prompt`` request (a prompt of ``--prompt-chars`` characters, a Context Packet's order of
size), the agent's ``session/update`` notifications (four ``agent_message_chunk``s by default, each
parsed), its result. The CPU is this process's (``time.process_time``; the agent's is not in it),
over the Turns after a warm-up.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from bench.compare_servers import FAKE_AGENT


class Pipe:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0
        self.updates = 0

    async def call(self, method: str, params: dict) -> dict:
        self.next_id += 1
        request_id = self.next_id
        line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        self.proc.stdin.write(line.encode() + b"\n")
        await self.proc.stdin.drain()
        while True:
            frame = json.loads(await self.proc.stdout.readline())
            if frame.get("id") == request_id and "method" not in frame:
                if "error" in frame:
                    raise RuntimeError(f"{method}: {frame['error']}")
                return frame["result"]
            if frame.get("method") == "session/update":
                self.updates += 1


async def _run(turns: int, warmup: int, prompt_chars: int) -> dict:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(FAKE_AGENT),
        "acp",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=1 << 22,
    )
    pipe = Pipe(proc)
    try:
        await pipe.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session = (await pipe.call("session/new", {"cwd": "/", "mcpServers": []}))["sessionId"]
        text = "[current_message]\n" + "the quick brown fox jumps over the lazy dog " * (prompt_chars // 44 + 1)
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": text[:prompt_chars]}]}
        for _ in range(warmup):
            await pipe.call("session/prompt", prompt)
        updates_before = pipe.updates
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(turns):
            await pipe.call("session/prompt", prompt)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            proc.kill()
            await proc.wait()
    return {
        "turns": turns,
        "prompt_chars": prompt_chars,
        "updates_per_turn": (pipe.updates - updates_before) / turns,
        "pipe_ms": round(cpu * 1000 / turns, 3),
        "round_trip_ms": round(wall * 1000 / turns, 3),
    }


def measure(turns: int = 2000, warmup: int = 200, prompt_chars: int = 1000) -> dict:
    return asyncio.run(_run(turns, warmup, prompt_chars))


if __name__ == "__main__":
    print(measure())

"""Entry point: ``python -m bench.pipes_turn``: what GroupX's own driver code costs per Turn on the
CLI pipes, in one process and without the server (docs/PERFORMANCE.md "Round 7", D65).

Starts the side-by-side kit's instant fake agent (``bench/anchor/fake_acp_agent.py``) through
GroupX's ``AcpDriver`` (flavour ``kimi``, as ``bench.compare`` configures it), then runs ``--turns``
sequential Turns the way a lane does, minus the lane's own work: ``session.start_turn`` with a
prompt of ``--prompt-chars`` characters, then ``turn_collector.collect`` with hooks that do
nothing. The kit's agent answers each prompt with four ``session/update`` chunks and the result.

Printed per Turn: this process's CPU (``time.process_time``; the agent's is not in it), the median
of ``--rounds`` rounds, beside ``bench.floor``'s pipe part (the same exchange with as little code
as it allows); and, from one further round under ``cProfile``, the Python calls (all, and those to
GroupX's own ``agents/``) and the event loop's iterations: counts the machine's load moves far less
than it moves CPU seconds (how the agent's frames happen to arrive, in one read or several, still
moves them a little).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import pstats
import statistics
import sys
import time
from collections.abc import Awaitable, Callable

from agents import turn_collector
from agents.drivers.acp import AcpDriver
from agents.drivers.base import LaunchProfile, McpAttachment
from bench.compare_servers import FAKE_AGENT

LOG = logging.getLogger("bench.pipes_turn")


def _profile(workdir: str) -> LaunchProfile:
    # The MCP endpoint is announced to the agent, never contacted by the kit's fake.
    return LaunchProfile(
        agent_id="kimi",
        actor_id="agent:kimi",
        driver="kimi",
        command=(sys.executable, str(FAKE_AGENT)),
        cwd=workdir,
        instance_id="bench",
        binding_id="bench",
        mcp=McpAttachment(url="http://127.0.0.1:9/mcp", binding_id="bench"),
    )


async def _session_turns(prompt_chars: int) -> tuple[Callable[[], Awaitable[None]], Callable[[], Awaitable[None]]]:
    session = await AcpDriver("kimi").start(_profile(str(FAKE_AGENT.parent)))
    text = "[current_message]\n" + "the quick brown fox jumps over the lazy dog " * (prompt_chars // 44 + 1)
    text = text[:prompt_chars]
    hooks = turn_collector.TurnHooks()

    async def one_turn() -> None:
        native = await session.start_turn("turn", text)
        ending = await turn_collector.collect(
            native, turn_collector.Collected(), hooks, first_event_s=60, idle_s=60, logger=LOG, label="bench"
        )
        if ending.kind != turn_collector.COMPLETED:
            raise RuntimeError(f"the Turn ended {ending}")

    return one_turn, session.close


async def _run(turns: int, warmup: int, rounds: int, prompt_chars: int) -> dict:
    one_turn, close = await _session_turns(prompt_chars)
    try:
        for _ in range(warmup):
            await one_turn()
        cpu_ms = []
        for _ in range(rounds):
            started = time.process_time()
            for _ in range(turns):
                await one_turn()
            cpu_ms.append((time.process_time() - started) * 1000 / turns)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(turns):
            await one_turn()
        profiler.disable()
    finally:
        await close()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    calls = sum(entry[1] for entry in stats.values())
    own = str(FAKE_AGENT.parents[2] / "agents")
    own_calls = sum(entry[1] for (path, _line, _name), entry in stats.items() if path.startswith(own))
    iterations = sum(
        entry[1]
        for (path, _line, name), entry in stats.items()
        if name == "_run_once" and path.endswith("base_events.py")
    )
    return {
        "turns": turns,
        "rounds": rounds,
        "prompt_chars": prompt_chars,
        "cpu_ms_per_turn": round(statistics.median(cpu_ms), 3),
        "cpu_ms_each_round": [round(v, 3) for v in cpu_ms],
        "python_calls_per_turn": round(calls / turns, 1),
        "groupx_calls_per_turn": round(own_calls / turns, 1),
        "loop_iterations_per_turn": round(iterations / turns, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pipes_turn", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prompt-chars", type=int, default=1000)
    args = parser.parse_args(argv)
    result = asyncio.run(_run(args.turns, args.warmup, args.rounds, args.prompt_chars))
    print(
        f"{result['turns']} sequential Turns through AcpDriver + collect, per Turn: "
        f"CPU {result['cpu_ms_per_turn']} ms (rounds: {', '.join(map(str, result['cpu_ms_each_round']))}), "
        f"{result['python_calls_per_turn']} Python calls ({result['groupx_calls_per_turn']} of them to "
        f"agents/), {result['loop_iterations_per_turn']} event-loop iterations"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

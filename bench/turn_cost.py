"""The database side of one Turn, measured in-process: no HTTP, no threads, no agent CLIs.

    python -m bench.turn_cost [--turns 300] [--warmup 60] [--dump FILE]

Sets up a throwaway SQLite database (migrations, a ``groupx.json`` with three fake agents) and runs
each Turn through the real functions, in the order a lane calls them: ``post_message`` →
``next_queued_turn`` → ``build_context_packet`` → ``claim`` → ``mark_prompt_invoked`` →
``mark_started`` → ``finish`` (completed, a short reply). Targets go round-robin over the agents,
one Turn at a time, so each packet holds the few messages since that agent's last Turn.

It prints, per step, the median CPU time of this thread (``time.thread_time``: what the GIL-bound
server pays, and steadier than wall time on a shared machine), the median wall time and the query
count (BEGIN/COMMIT included). Queries are counted on separate Turns after the timed ones, because
``CaptureQueriesContext`` switches on Django's debug cursor, which costs time itself.

``--calls`` adds, per step, the median count of function calls (Python's and C's, ``sys.setprofile``)
on ``--count`` more Turns: a figure the machine's load does not move, for changes of a few µs.

``--dump FILE`` writes every row the run left (events, turns, attempts, cursors, dated memory,
receipts) as JSON with random ids and timestamps replaced by stable placeholders: two runs of the
same code give identical files, so a diff shows any change of behaviour.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

AGENTS = ("grok", "hermes", "kimi")
STEPS = (
    "post_message",
    "next_queued_turn",
    "build_context_packet",
    "claim",
    "mark_prompt_invoked",
    "mark_started",
    "finish",
)


def _configure(workdir: Path) -> None:
    """Point Django at a fresh groupx.json and database in ``workdir``, then migrate."""
    bin_dir = Path(__file__).resolve().parents[1] / "agents" / "fakes" / "bin"
    agents = {name: {"command": str(bin_dir / name), "cwd": str(workdir)} for name in AGENTS}
    config = workdir / "groupx.json"
    config.write_text(json.dumps({"server": {"host": "127.0.0.1", "port": 4310}, "agents": agents}))
    for key in [k for k in os.environ if k.startswith("GROUPX_")]:
        del os.environ[key]
    os.environ["GROUPX_CONFIG"] = str(config)
    os.environ["DJANGO_SETTINGS_MODULE"] = "groupx_site.settings"

    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    from agents import actor_rows

    actor_rows.sync_actors()


class Turns:
    """Runs Turns through the real functions; ``step`` wraps each call (timing or counting)."""

    def __init__(self) -> None:
        from django.conf import settings

        from memory.context import soft_target
        from rooms.events import ActorRef
        from setup_wizard import roster

        self.agents = [roster.live_agent(f"agent:{name}") for name in AGENTS]
        self.actors = {
            a.actor_id: ActorRef(a.actor_id, "agent", a.display_name, f"inst_{a.actor_id}") for a in self.agents
        }
        self.budget = soft_target(settings.GROUPX_CONFIG.limits.contextCharacters)
        self.count = 0
        self.returned: list[dict] = []  # what the functions returned, for --dump

    def run_one(self, step) -> None:
        from agents import dispatch
        from memory.context import build_context_packet
        from turns import lifecycle
        from turns.lifecycle import TurnOutcome
        from turns.messages import post_message
        from turns.states import COMPLETED

        agent = self.agents[self.count % len(self.agents)]
        self.count += 1
        payload = {
            "clientCommandId": f"bench-{self.count}",
            "to": [agent.actor_id],
            "content": f"message {self.count}: what is the state of the build?",
        }
        accepted = step("post_message", post_message, payload)
        # What the lane reads before each Turn: its head and the native-reset mark (D41).
        turn = step("next_queued_turn", dispatch.lane_head, agent.actor_id).turn
        packet = step("build_context_packet", build_context_packet, agent, turn.source_event_id, budget=self.budget)
        claim = step(
            "claim",
            lifecycle.claim,
            turn.turn_id,
            binding_id=f"binding_{agent.actor_id}",
            instance_id=f"inst_{agent.actor_id}",
            context_through_seq=packet.through_seq,
        )
        assert step("mark_prompt_invoked", lifecycle.mark_prompt_invoked, claim)
        actor = self.actors[agent.actor_id]
        step("mark_started", lifecycle.mark_started, claim, actor, f"native-{self.count}")
        outcome = TurnOutcome(status=COMPLETED, content=f"reply {self.count}: the build is green.")
        assert step("finish", lifecycle.finish, claim, turn.turn_id, outcome, actor) == COMPLETED
        self.returned.append(
            {
                "accepted": accepted,
                "packet": vars(packet),
                "claim": {
                    key: getattr(claim, key)
                    for key in (
                        "turn_id",
                        "attempt_id",
                        "target_actor_id",
                        "source_event_id",
                        "correlation_id",
                        "root_correlation_id",
                    )
                },
            }
        )


def _timed(turns: Turns, count: int) -> dict[str, list[tuple[int, int]]]:
    samples: dict[str, list[tuple[int, int]]] = {name: [] for name in STEPS}

    def step(name, fn, *args, **kwargs):
        cpu, wall = time.thread_time_ns(), time.perf_counter_ns()
        result = fn(*args, **kwargs)
        samples[name].append((time.thread_time_ns() - cpu, time.perf_counter_ns() - wall))
        return result

    for _ in range(count):
        turns.run_one(step)
    return samples


def _counted(turns: Turns, count: int) -> dict[str, list[int]]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    counts: dict[str, list[int]] = {name: [] for name in STEPS}

    def step(name, fn, *args, **kwargs):
        with CaptureQueriesContext(connection) as captured:
            result = fn(*args, **kwargs)
        counts[name].append(len(captured.captured_queries))
        return result

    for _ in range(count):
        turns.run_one(step)
    return counts


def counting_calls(fn, *args, **kwargs) -> tuple[object, int]:
    """``fn(*args, **kwargs)``'s result and the function calls it made (Python's and C's)."""
    seen = [0]

    def profile(frame, event, arg):
        if event in ("call", "c_call"):
            seen[0] += 1

    sys.setprofile(profile)
    try:
        result = fn(*args, **kwargs)
    finally:
        sys.setprofile(None)
    return result, seen[0]


def _calls(turns: Turns, count: int) -> dict[str, list[int]]:
    calls: dict[str, list[int]] = {name: [] for name in STEPS}

    def step(name, fn, *args, **kwargs):
        result, made = counting_calls(fn, *args, **kwargs)
        calls[name].append(made)
        return result

    for _ in range(count):
        turns.run_one(step)
    return calls


def _report(
    samples: dict[str, list[tuple[int, int]]], counts: dict[str, list[int]], calls: dict[str, list[int]] | None = None
) -> str:
    lines = [f"{'step':<22}{'CPU µs':>9}{'wall µs':>9}{'queries':>9}" + (f"{'calls':>9}" if calls else "")]
    totals = [0, 0, 0, 0]
    for name in STEPS:
        cpu = statistics.median(s[0] for s in samples[name]) / 1000
        wall = statistics.median(s[1] for s in samples[name]) / 1000
        queries = statistics.median(counts[name])
        called = statistics.median(calls[name]) if calls else 0
        totals = [totals[0] + cpu, totals[1] + wall, totals[2] + queries, totals[3] + called]
        lines.append(f"{name:<22}{cpu:>9.0f}{wall:>9.0f}{queries:>9g}" + (f"{called:>9g}" if calls else ""))
    per_turn = [sum(s[i] for step in samples.values() for s in step) / len(samples["finish"]) / 1000 for i in (0, 1)]
    lines.append(
        f"{'sum of medians':<22}{totals[0]:>9.0f}{totals[1]:>9.0f}{totals[2]:>9g}"
        + (f"{totals[3]:>9g}" if calls else "")
    )
    lines.append(f"{'mean per turn':<22}{per_turn[0]:>9.0f}{per_turn[1]:>9.0f}")
    return "\n".join(lines)


# ---- --dump: the rows, comparable across runs ---------------------------------------------------

_RANDOM_ID = re.compile(r"\b(?:evt|corr|turn|att|cmd|mem|idn)_[0-9a-f]{32}\b")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?")


def dump_rows(path: Path, returned: list[dict]) -> None:
    from django.db import connection

    tables = (
        "rooms_event",
        "rooms_clientcommand",
        "turns_turn",
        "turns_turnattempt",
        "agents_deliverycursor",
        "memory_datedmemorysource",
        "memory_datedmemoryrollup",
    )
    names: dict[str, str] = {}

    def stable(text: str) -> str:
        def placeholder(match: re.Match) -> str:
            prefix = match.group(0).split("_")[0]
            return names.setdefault(match.group(0), f"{prefix}#{len(names)}")

        text = _RANDOM_ID.sub(placeholder, text)
        return _TIMESTAMP.sub("<time>", text)

    # Ordered by the tables' natural keys that do not depend on random ids.
    order = {
        "rooms_event": "seq",
        "turns_turn": "enqueue_seq",
        "turns_turnattempt": "claimed_at",
        "rooms_clientcommand": "client_command_id",
        "agents_deliverycursor": "actor_id",
        "memory_datedmemorysource": "response_seq",
        "memory_datedmemoryrollup": "actor_id",
    }
    out: dict[str, list] = {}
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f"SELECT * FROM {table} ORDER BY {order[table]}")
            columns = [c[0] for c in cursor.description]
            out[table] = [{c: stable(str(v)) for c, v in zip(columns, row, strict=True)} for row in cursor.fetchall()]
    out["returned"] = [json.loads(stable(json.dumps(item))) for item in returned]
    path.write_text(json.dumps(out, indent=1, sort_keys=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=300, help="timed turns (default 300)")
    parser.add_argument("--warmup", type=int, default=60, help="untimed turns first (default 60)")
    parser.add_argument("--count", type=int, default=15, help="turns whose queries are counted (default 15)")
    parser.add_argument("--calls", action="store_true", help="also count function calls per step")
    parser.add_argument("--dump", type=Path, help="write the rows left by the run, normalised, to this file")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="groupx-turn-cost-") as workdir:
        _configure(Path(workdir))
        import gc

        turns = Turns()
        _timed(turns, args.warmup)
        gc.collect()
        samples = _timed(turns, args.turns)
        counts = _counted(turns, args.count)
        calls = _calls(turns, args.count) if args.calls else None
        print(
            f"{args.turns} turns after {args.warmup} warm-up, queries counted on {args.count} more "
            f"(round-robin over {len(AGENTS)} agents, one at a time)"
        )
        print(_report(samples, counts, calls))
        if args.dump:
            dump_rows(args.dump, turns.returned)
            print(f"rows written to {args.dump}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Entry point: ``python -m bench.latency_path``: where the reply of a lone sequential Turn spends
its milliseconds, step by step, on the server's own clock (docs/PERFORMANCE.md "Round 9").

Starts ``groupx start`` as the side-by-side run does (``bench/compare_servers.py``: three instant
fake ACP agents), but through ``--serve`` below, which first wraps a few functions of the server
to note a monotonic time (``time.perf_counter_ns``, the clock the client reads too) at each step:

- the sockets (twisted): a request's bytes read, a response or SSE frame handed to the transport
  (``tcp.write``) and written to the socket (``sock.send``), labelled by the event types it holds;
- the CLI's pipes (asyncio): a frame written to a CLI's stdin, a chunk read from its stdout
  (``pipe.recv chunk`` for content updates, ``pipe.recv result`` for the prompt's response);
- the writer thread (``groupx_site/store/db.py``): a call queued (``writer.put``), run
  (``writer.run`` … ``writer.done``, by function name; ``writer.group`` for calls sharing a commit),
  and its result taken up by the loop (``loop.deliver``);
- the lane (``agents/lanes.py``): woken, its hooks' ``started`` and first ``content``, ``_finish``.

Then it posts ``--turns`` messages one at a time to ``agent:kimi`` (after ``--warmup``), each
waited to its ``turn.completed`` on one SSE stream, like the kit's latency workload, and prints
for every step its median time after the POST was sent (and its p25–p75), first occurrence per
Turn, in order. ``--raw K`` also prints the K-th Turn's every note, in order (``--loop``: with
each event-loop callback run, named, which shows what a step waited behind; it slows the loop).
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

TRACE_ENV = "GROUPX_BENCH_PATH_TRACE"
LOOP_ENV = "GROUPX_BENCH_PATH_LOOP"
TYPES = re.compile(rb'"type":\s*"([a-z_.]+)"')

# ---- the server side (``--serve``) -----------------------------------------------------------

_notes: list[tuple[int, str]] = []


LONG_CALLBACK_NS = 100_000  # --loop also notes the end of a callback that ran longer


def note(label: str) -> None:
    _notes.append((time.perf_counter_ns(), label))  # list.append is atomic under the GIL


def _types(data: bytes) -> str:
    found = TYPES.findall(data)
    return ",".join(dict.fromkeys(t.decode() for t in found)) if found else repr(data[:12])


def _what(data) -> str:
    data = bytes(data)
    return data[9:12].decode() if data[:5] == b"HTTP/" else _types(data)


def _wrap(owner, name: str, before=None, after=None) -> None:
    original = getattr(owner, name)

    def wrapped(*args, **kwargs):
        if before is not None:
            before(*args, **kwargs)
        try:
            return original(*args, **kwargs)
        finally:
            if after is not None:
                after(*args, **kwargs)

    setattr(owner, name, wrapped)


def _wrap_async(owner, name: str, label: str) -> None:
    original = getattr(owner, name)

    async def wrapped(*args, **kwargs):
        note(f"{label} enter")
        try:
            return await original(*args, **kwargs)
        finally:
            note(f"{label} exit")

    setattr(owner, name, wrapped)


def _install() -> None:
    import daphne.server  # noqa: F401  installs twisted's asyncio reactor first, as groupx_site/serve.py does

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "groupx_site.settings")
    import django

    django.setup()
    from twisted.internet import tcp

    from agents import lanes
    from agents.drivers import acp_session
    from groupx_site.speedups import group_commit
    from groupx_site.store import db

    _wrap(tcp.Connection, "_dataReceived", before=lambda self, data: note(f"sock.recv {data[:16]!r}"))
    _wrap(tcp.Connection, "write", before=lambda self, data: note(f"tcp.write {_what(data)}"))
    _wrap(tcp.Connection, "writeSomeData", before=lambda self, data: note(f"sock.send {_what(data)}"))
    _wrap(
        asyncio.unix_events._UnixWritePipeTransport,
        "write",
        before=lambda self, data: note(
            "pipe.write " + ("prompt" if b"session/prompt" in data else repr(bytes(data[:20])))
        ),
    )

    def received(self, fd, data):
        if fd == 1:
            kinds = [k for k, mark in (("chunk", b"agent_message_chunk"), ("result", b'"stopReason"')) if mark in data]
            note(f"pipe.recv {'+'.join(kinds) or 'other'}")

    _wrap(asyncio.subprocess.SubprocessStreamProtocol, "pipe_data_received", before=received)

    names: dict[int, str] = {}
    original_faults = db._faults_as_codes

    def named(fn, *, clears):
        call = original_faults(fn, clears=clears)
        call.__qualname__ = getattr(fn, "__qualname__", "?")
        return call

    db._faults_as_codes = named

    def put(self, item):
        call = item[1]  # (loop, future, context, fn, args, kwargs) for a write call
        if len(call) != 6:
            return
        name = names[id(call[1])] = getattr(call[3], "__qualname__", "?")
        note(f"writer.put {name}")

    _wrap(db._WriterThread, "_put", before=put)
    _wrap(
        db,
        "_run_then_post",
        before=lambda loop, future, context, fn, *a: note(f"writer.run {names.get(id(future))}"),
        after=lambda loop, future, context, fn, *a: note(f"writer.done {names.get(id(future))}"),
    )
    _wrap(
        group_commit,
        "run_together",
        before=lambda calls, *a: note("writer.group " + "+".join(str(names.get(id(c[1]))) for c in calls)),
        after=lambda calls, *a: note("writer.group done"),
    )
    _wrap(db, "_deliver", before=lambda loop, future, *a: note(f"loop.deliver {names.get(id(future))}"))
    _wrap(lanes.Lane, "poke", before=lambda self: note(f"lane.poke {self.agent.actor_id}"))
    _wrap_async(lanes.Lane, "_read_head", "lane.read_head")
    _wrap_async(lanes._LaneHooks, "started", "hooks.started")
    _wrap_async(lanes._LaneHooks, "content", "hooks.content")
    _wrap_async(lanes.Lane, "_finish", "lane.finish")
    _wrap_async(acp_session.AcpSession, "start_turn", "acp.start_turn")
    if os.environ.get(LOOP_ENV):
        started: list[int] = []  # one loop thread: a stack of one

        def run_begins(handle) -> None:
            note(f"loop.run {_callback_name(handle)}")
            started.append(time.perf_counter_ns())

        def run_ends(handle) -> None:
            # Only a callback that held the loop long: the others would double the notes.
            took = time.perf_counter_ns() - started.pop()
            if took > LONG_CALLBACK_NS:
                note(f"loop.long {_callback_name(handle)} {took / 1000:.0f} µs")

        _wrap(asyncio.events.Handle, "_run", before=run_begins, after=run_ends)

    def dump() -> None:
        with open(os.environ[TRACE_ENV], "w") as out:
            for at, label in _notes:
                out.write(f"{at} {label}\n")

    atexit.register(dump)


def _callback_name(handle) -> str:
    callback = handle._callback
    task = getattr(callback, "__self__", None)
    if isinstance(task, asyncio.Task):
        coro = task.get_coro()
        return f"task {getattr(coro, '__qualname__', coro)}"
    return getattr(callback, "__qualname__", repr(callback))[:60]


def _serve() -> None:
    _install()
    from groupx_site.cli import main

    sys.exit(main(sys.argv[sys.argv.index("--serve") + 1 :]))


# ---- the client side ----------------------------------------------------------------------------


async def _workload(base_url: str, turns: int, warmup: int) -> list[dict]:
    from bench.latency_pair import Side

    side = Side("groupx", base_url)
    await side.open()
    marks = []
    try:
        for index in range(warmup + turns):
            seen = await side.turn(keep=False)
            if index >= warmup:
                marks.append(
                    {
                        ("client.202" if key == "accepted" else f"client.{key}"): int(at * 1e9)
                        for key, at in seen.items()
                    }
                )
    finally:
        await side.close()
    return marks


def _read_notes(path: Path) -> list[tuple[int, str]]:
    notes = []
    for line in path.read_text().splitlines():
        at, label = line.split(" ", 1)
        notes.append((int(at), label))
    return notes


def _per_turn(marks: list[dict], notes: list[tuple[int, str]]) -> list[list[tuple[float, str]]]:
    """Each Turn's notes (from its POST to the next POST), as ms after its POST."""
    turns = []
    for index, mark in enumerate(marks):
        start = mark["client.sent"]
        end = marks[index + 1]["client.sent"] if index + 1 < len(marks) else start + 10**10
        own = [(at, label) for at, label in notes if start <= at < end]
        own += [(at, label) for label, at in mark.items() if label.startswith("client.")]
        turns.append([((at - start) / 1e6, label) for at, label in sorted(own)])
    return turns


def summary(turns: list[list[tuple[float, str]]]) -> list[tuple[str, float, float, float, int]]:
    """(step, median, p25, p75, in how many Turns) for each step's first note of each Turn."""
    firsts: dict[str, list[float]] = {}
    for turn in turns:
        seen = set()
        for ms, label in turn:
            if label.startswith("loop.run") or label in seen:
                continue
            seen.add(label)
            firsts.setdefault(label, []).append(ms)
    rows = []
    for label, values in firsts.items():
        quartiles = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
        rows.append((label, statistics.median(values), quartiles[0], quartiles[2], len(values)))
    return sorted(rows, key=lambda row: row[1])


# The reply's path in segments, each from one step's first note to another's (ms, per Turn).
SEGMENTS = (
    ("POST sent -> 202 read", "client.sent", "client.202"),
    ("POST sent -> the post's writer call queued", "client.sent", "writer.put accept_message"),
    (
        "the post's writer call, queued -> result on the loop",
        "writer.put accept_message",
        "loop.deliver accept_message",
    ),
    ("the post's result -> the lane's claim queued", "loop.deliver accept_message", "writer.put claim_head"),
    ("the claim, queued -> result on the loop", "writer.put claim_head", "loop.deliver claim_head"),
    ("  the claim: queued -> running on the writer thread", "writer.put claim_head", "writer.run claim_head"),
    ("  the claim: running -> result on the loop", "writer.run claim_head", "loop.deliver claim_head"),
    ("the claim's result -> the prompt written", "loop.deliver claim_head", "pipe.write prompt"),
    ("the prompt written -> the CLI's first answer read", "pipe.write prompt", "pipe.recv"),
    ("the CLI's first answer -> the terminal queued", "pipe.recv", "writer.put finish"),
    ("the terminal, queued -> result on the loop", "writer.put finish", "loop.deliver finish"),
    ("  the terminal: queued -> running on the writer thread", "writer.put finish", "writer.run finish"),
    ("  the terminal: running -> result on the loop", "writer.run finish", "loop.deliver finish"),
    ("the terminal's result -> the reply read from SSE", "loop.deliver finish", "client.message.created"),
    ("POST sent -> the first content delta read", "client.sent", "client.turn.content.delta"),
    ("POST sent -> the reply read from SSE", "client.sent", "client.message.created"),
)


def segments(turns: list[list[tuple[float, str]]]) -> list[tuple[str, float, float, float]]:
    """(segment, median, p25, p75) of ``SEGMENTS`` over the Turns that have both ends."""
    rows = []
    for name, start, end in SEGMENTS:
        values = []
        for turn in turns:
            begin = next((ms for ms, label in turn if label.startswith(start)), None)
            finish = next((ms for ms, label in turn if label.startswith(end) and (begin is None or ms >= begin)), None)
            if begin is not None and finish is not None:
                values.append(finish - begin)
        if len(values) > 1:
            quartiles = statistics.quantiles(values, n=4)
            rows.append((name, statistics.median(values), quartiles[0], quartiles[2]))
    return rows


def thirds(turns: list[list[tuple[float, str]]]) -> list[tuple[str, float, float]]:
    """(segment, median over the fastest third of the Turns, over the slowest third), the Turns
    ranked by POST -> reply: which segment a slow Turn loses its time in (D83)."""

    def reply(turn):
        return next((ms for ms, label in turn if label == "client.message.created"), float("inf"))

    ranked = sorted(turns, key=reply)
    third = max(1, len(ranked) // 3)
    fast = {name: median for name, median, _, _ in segments(ranked[:third])}
    slow = {name: median for name, median, _, _ in segments(ranked[-third:])}
    return [(name, fast[name], slow[name]) for name, _, _ in SEGMENTS if name in fast and name in slow]


def main(argv: list[str] | None = None) -> int:
    if "--serve" in sys.argv:
        _serve()
        return 0
    parser = argparse.ArgumentParser(prog="python -m bench.latency_path", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--raw", type=int, default=None, help="also print the K-th Turn's every note")
    parser.add_argument("--loop", action="store_true", help="note every event-loop callback (slows the loop)")
    parser.add_argument("--json", type=Path, default=None, help="write the per-Turn notes there")
    parser.add_argument(
        "--thirds",
        action="store_true",
        help="also the segments' medians over the fastest and the slowest third of the Turns",
    )
    args = parser.parse_args(argv)

    from bench.compare_servers import Server

    with tempfile.TemporaryDirectory(prefix="groupx-latency-path-") as tmp:
        trace = Path(tmp) / "notes"

        class Traced(Server):
            def _command(self):
                argv, env = super()._command()
                env = {**env, TRACE_ENV: str(trace), **({LOOP_ENV: "1"} if args.loop else {})}
                return [argv[0], "-m", "bench.latency_path", "--serve", *argv[3:]], env

        server = Traced("start", Path(tmp) / "server").start()
        try:
            marks = asyncio.run(_workload(server.base_url, args.turns, args.warmup))
        finally:
            server.stop()
        turns = _per_turn(marks, _read_notes(trace))
    print(f"{len(turns)} Turns; ms after the POST was sent (median, p25-p75), first note per Turn:")
    for label, median, low, high, count in summary(turns):
        print(f"{median:8.3f}  ({low:6.3f}-{high:6.3f})  {label}{'' if count == len(turns) else f'  [{count} Turns]'}")
    print("\nThe reply's path in segments (ms per Turn: median, p25-p75):")
    for name, median, low, high in segments(turns):
        print(f"{median:8.3f}  ({low:6.3f}-{high:6.3f})  {name}")
    if args.thirds:
        print("\nThe same, fastest third of the Turns by reply against the slowest (medians, ms):")
        for name, fast, slow in thirds(turns):
            print(f"{fast:8.3f}  {slow:8.3f}  {name}")
    if args.raw is not None:
        print(f"\nTurn {args.raw}:")
        for ms, label in turns[args.raw]:
            print(f"{ms:8.3f}  {label}")
    if args.json is not None:
        args.json.write_text(json.dumps(turns))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Scale figures a user asks about (the speed goals): ``python -m bench.scale <figure>``.

    python -m bench.scale startup [--agents 5]                 # `groupx start` to ready, cold and warm
    python -m bench.scale store [--events 1000000] [--memory 10000]   # bootstrap and a Turn at scale
    python -m bench.scale packet [--events 1000000] [--memory 10000]  # the Context Packet's build alone
    python -m bench.scale sse [--clients 200]                  # fan-out to 200 SSE clients under load
    python -m bench.scale soak [--seconds 1800]                # RSS over a soak of steady traffic

Every server is real (daphne, or ``groupx start`` for start-up), on loopback, with the instant fake
agents of ``bench/server.py``; each figure prints as JSON with the load average beside it. The store
is generated straight into SQLite while the server is stopped (``BenchServer.seed_events`` and
``seed_memory`` here): a million events through the API would take hours.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

from bench import latency, throughput
from bench.compare_servers import FAKE_AGENT, free_port
from bench.fanout import FanOut
from bench.memory import peak_rss
from bench.observer import Observer
from bench.server import AGENTS, REPO, BenchServer, wait_until


def load() -> list[float]:
    return [round(x, 1) for x in os.getloadavg()]


# ---------------------------------------------------------------------------------------- start-up


def _start_config(workdir: Path, agents: int) -> tuple[Path, int]:
    port = free_port()
    command = {"executable": sys.executable, "prefixArgs": [str(FAKE_AGENT)]}
    config = {
        "server": {"host": "127.0.0.1", "port": port},
        "agents": {
            f"fake{i}": {"driver": "kimi", "name": f"Fake {i}", "command": command, "cwd": str(workdir)}
            for i in range(1, agents + 1)
        },
    }
    path = workdir / "groupx.json"
    path.write_text(json.dumps(config))
    return path, port


def _ready(base_url: str, agents: int) -> bool:
    try:
        health = httpx.get(f"{base_url}/api/health", timeout=2, trust_env=False).json()
    except (httpx.HTTPError, ValueError):
        return False
    found = health.get("agents") or []
    return (
        health.get("readiness") == "ready" and len(found) >= agents and all(a.get("status") == "ready" for a in found)
    )


def start_to_ready(config: Path, port: int, agents: int, workdir: Path) -> float:
    """Seconds from spawning ``groupx start`` to health saying ready with every agent ready."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUPX_")}
    env["GROUPX_CONFIG"] = str(config)
    started = time.perf_counter()
    with open(workdir / "server.log", "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "groupx_site", "start", "--config", str(config), "--no-open"],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        wait_until(lambda: _ready(f"http://127.0.0.1:{port}", agents), 120.0, f"{agents} agents ready")
        return round(time.perf_counter() - started, 3)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def startup(args, root: Path) -> dict:
    config, port = _start_config(root, args.agents)
    cold = start_to_ready(config, port, args.agents, root)  # a fresh store: migrations included
    warm = [start_to_ready(config, port, args.agents, root) for _ in range(args.repeat)]
    return {
        "agents": args.agents,
        "coldSeconds": cold,
        "warmSeconds": warm,
        "warmMedianSeconds": round(statistics.median(warm), 3),
    }


# ---------------------------------------------------------------------------------------- the store


def seed_memory(db_path: Path, items: int) -> int:
    """Active memory items the Context Packet reads: half room scope, half the kimi agent's core
    memory (memory/sql.py:_PACKET_MEMORY), inserted with the FTS triggers running as in use."""
    db = sqlite3.connect(db_path)
    try:
        now = datetime.now(UTC).isoformat()
        rows = (
            (
                f"mem_bench{i}",
                *(("room", "room:main", None) if i % 2 else ("agent", "agent:kimi", "core")),
                "fact",
                "user:web",
                f"seeded memory item {i}: the build uses the project's pinned toolchain",
                "web",
                "active",
                now,
            )
            for i in range(items)
        )
        db.executemany(
            "INSERT INTO memory_memoryrecord (memory_id, scope_type, scope_id, agent_memory_type, kind,"
            " author_actor_id, content, source_kind, status, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
            rows,
        )
        db.commit()
        return db.execute("SELECT COUNT(*) FROM memory_memoryrecord").fetchone()[0]
    finally:
        db.close()


def mark_compacted(db_path: Path, agents: tuple[str, ...]) -> int:
    """The steady state of a long-lived room: a summary covers the log and every agent has been
    delivered all of it (the rows compaction and delivery would have left). Returns the head."""
    db = sqlite3.connect(db_path)
    try:
        head = db.execute("SELECT MAX(seq) FROM rooms_event").fetchone()[0]
        now = datetime.now(UTC).isoformat()
        db.execute(
            "INSERT INTO memory_summary (summary_id, room_id, from_seq, through_seq, content, generator_actor_id,"
            " status, created_at) VALUES ('sum_bench', 'room:main', 0, ?, 'the seeded history, summarised',"
            " 'agent:kimi', 'active', ?)",
            (head, now),
        )
        db.executemany(
            "INSERT INTO agents_deliverycursor (room_id, actor_id, last_delivered_seq, last_summary_seq,"
            " updated_at) VALUES ('room:main', ?, ?, ?, ?)",
            [(f"agent:{name}", head, head, now) for name in agents],
        )
        db.commit()
        return head
    finally:
        db.close()


def bootstrap_ms(base_url: str, requests: int = 20) -> dict:
    times = []
    with httpx.Client(base_url=base_url, timeout=30, trust_env=False) as client:
        for _ in range(requests):
            started = time.perf_counter()
            client.get("/api/bootstrap").raise_for_status()
            times.append((time.perf_counter() - started) * 1000)
    return {"medianMs": round(statistics.median(times), 2), "maxMs": round(max(times), 2)}


async def first_turn(base_url: str, timeout: float, probe_correlation: str) -> dict:
    """One message to kimi in a room that needs compacting first: seconds to its reply, the
    checkpoint it left, and the slowest of the writes posted meanwhile (``POST /api/memory``: the
    writer thread's availability while the Turn compacts and builds its packets)."""
    async with httpx.AsyncClient(base_url=base_url, timeout=timeout, trust_env=False) as client:
        head = (await client.get("/api/bootstrap")).json()["room"]["throughSeq"]
        async with Observer(base_url, head) as room:
            started = time.perf_counter()
            response = await client.post(
                "/api/messages",
                json={
                    "clientCommandId": "scale-first",
                    "to": ["agent:kimi"],
                    "content": "the first Turn after the import",
                },
            )
            response.raise_for_status()
            message_id, writes = response.json()["messageEventId"], []
            replied = asyncio.create_task(room.until(lambda: message_id in room.replies, timeout))
            while not replied.done():
                posted = time.perf_counter()
                # a memory record in a seeded thread: a write no packet of this run reads
                (
                    await client.post(
                        "/api/memory",
                        json={
                            "clientCommandId": f"scale-probe-{len(writes)}",
                            "scope": {"type": "correlation", "id": probe_correlation},
                            "kind": "note",
                            "content": "a write while the first Turn runs",
                        },
                    )
                ).raise_for_status()
                writes.append((time.perf_counter() - posted) * 1000)
                await asyncio.wait([replied], timeout=0.5)  # the probes' pace, not a synchronisation
            await replied
            seconds = room.replies[message_id] - started
        context = (await client.get("/api/context")).json()
    return {
        "seconds": round(seconds, 2),
        "summaryThroughSeq": context.get("summaryThroughSeq"),
        "uncompactedMessagesAfter": context["uncompactedMessageCount"],
        "writesMeanwhile": len(writes),
        "slowestWriteMs": round(max(writes), 1) if writes else None,
    }


def store(args, root: Path) -> dict:
    server = BenchServer(root / "store")
    server.start()
    server.stop()
    seeded = time.perf_counter()
    events = server.seed_events(args.events)
    memory = seed_memory(server.db_path, args.memory)
    if args.compacted:
        mark_compacted(server.db_path, AGENTS)
    seed_s = round(time.perf_counter() - seeded, 1)
    with sqlite3.connect(server.db_path) as db:
        seeded_thread = db.execute(
            "SELECT correlation_id FROM rooms_event WHERE event_id LIKE 'evt_bench%' LIMIT 1"
        ).fetchone()[0]
    server.proc = None
    started = time.perf_counter()
    server.start()  # migrations (none to apply), restart recovery, three sessions
    ready_s = round(time.perf_counter() - started, 2)
    found = {
        "events": events,
        "memoryItems": memory,
        "compacted": args.compacted,
        "seedSeconds": seed_s,
        "restartToReadySeconds": ready_s,
    }
    try:
        found["bootstrap"] = bootstrap_ms(server.base_url)
        if not args.compacted:  # the worst case: the first Turn compacts (up to 8 passes) before it runs
            found["firstTurn"] = asyncio.run(first_turn(server.base_url, args.first_turn_timeout, seeded_thread))
        # each message's Turn builds a Context Packet over the whole store: its cost is in the reply time
        turn = asyncio.run(latency.run(server.base_url, messages=args.messages))
        found.update(postToReplyMs=turn["postToReplyMs"], postToStepMs=turn["postToStepMs"])
    except (TimeoutError, httpx.TimeoutException) as timeout:
        found["timedOut"] = f"{type(timeout).__name__}: a request or a reply did not come in time"
    finally:
        found["serverPeakMiB"] = peak_rss(server.proc.pid)["server"]["peakMiB"]
        server.stop()  # SIGTERM, then SIGKILL after 20 s (a writer thread busy for minutes)
    return found


def packet(args, root: Path) -> dict:
    """The Context Packet's build alone, in this process, over the store ``store`` seeds: each
    agent's packet for a new message, at the soft target and at the hard ceiling, and what the lane
    calls per Turn when nothing needs compacting (``packet_if_it_fits``); CPU ms of this thread,
    median of ``--repeat``. No server runs while it is measured."""
    server = BenchServer(root / "packet")
    server.start()
    server.stop()
    events = server.seed_events(args.events)
    memory = seed_memory(server.db_path, args.memory)
    if args.compacted:
        mark_compacted(server.db_path, AGENTS)
    os.environ.update(server.env, DJANGO_SETTINGS_MODULE="groupx_site.settings")
    import django

    django.setup()
    from django.conf import settings

    from memory.context import build_context_packet, soft_target
    from memory.engine import packet_if_it_fits
    from setup_wizard import roster
    from turns.messages import post_message

    hard = settings.GROUPX_CONFIG.limits.contextCharacters

    def cpu_ms(call) -> float:
        times = []
        for _ in range(args.repeat):
            started = time.thread_time()
            call()
            times.append((time.thread_time() - started) * 1000)
        return round(statistics.median(times), 2)

    found = {"events": events, "memoryItems": memory, "compacted": args.compacted, "repeat": args.repeat, "agents": {}}
    for name in AGENTS:
        agent = roster.live_agent(f"agent:{name}")
        source = post_message(
            {
                "clientCommandId": f"scale-packet-{name}",
                "to": [agent.actor_id],
                "content": "what is the state of the build?",
            }
        )["messageEventId"]
        soft = build_context_packet(agent, source, budget=soft_target(hard))
        found["agents"][name] = {
            "softCpuMs": cpu_ms(lambda a=agent, s=source: build_context_packet(a, s, budget=soft_target(hard))),
            "hardCpuMs": cpu_ms(lambda a=agent, s=source: build_context_packet(a, s, budget=hard)),
            "packetIfItFitsCpuMs": cpu_ms(lambda a=agent, s=source: packet_if_it_fits(a, s)),
            "softCharacters": len(soft.text),
            "softOmitted": soft.omitted,
            "unreadOmitted": soft.omitted_unread,
        }
    return found


# ---------------------------------------------------------------------------------------- SSE clients


def sse(args, root: Path) -> dict:
    server = BenchServer(root / "sse").start()
    try:
        fan = FanOut(server.base_url, args.clients)
        fan.start()
        flow = asyncio.run(throughput.run(server.base_url, messages=args.messages))
        head = httpx.get(f"{server.base_url}/api/bootstrap", timeout=30, trust_env=False).json()["room"]["throughSeq"]
        delivery = fan.finish(server.durable_seqs(head))
        rss = peak_rss(server.proc.pid)["server"]
    finally:
        server.stop()
    return {"clients": args.clients, "throughput": flow, "delivery": delivery, "serverPeakMiB": rss["peakMiB"]}


# ---------------------------------------------------------------------------------------- soak


def soak(args, root: Path) -> dict:
    """Batches of ``--batch`` messages to the three agents, back to back, for ``--seconds``; the
    server's resident memory after each batch. Growth is the last sample over the first."""
    server = BenchServer(root / "soak").start()
    samples, turns = [], 0
    try:
        deadline = time.monotonic() + args.seconds
        while time.monotonic() < deadline:
            done = asyncio.run(throughput.run(server.base_url, messages=args.batch))
            turns += done["completed"]
            samples.append(peak_rss(server.proc.pid)["server"]["rssMiB"])
        peak = peak_rss(server.proc.pid)["server"]["peakMiB"]
    finally:
        server.stop()
    return {
        "seconds": args.seconds,
        "turnsCompleted": turns,
        "batches": len(samples),
        "rssMiBFirstBatch": samples[0],
        "rssMiBLastBatch": samples[-1],
        "rssMiBSamples": samples[:: max(1, len(samples) // 20)],
        "peakMiB": peak,
        "growthMiB": round(samples[-1] - samples[0], 1),
    }


FIGURES = {"startup": startup, "store": store, "packet": packet, "sse": sse, "soak": soak}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.splitlines()[0])
    parser.add_argument("figure", choices=sorted(FIGURES))
    parser.add_argument("--agents", type=int, default=5, help="startup: agents in the room")
    parser.add_argument(
        "--repeat", type=int, default=3, help="startup: warm starts after the cold one; packet: builds timed per figure"
    )
    parser.add_argument("--events", type=int, default=1_000_000, help="store: events in the log")
    parser.add_argument("--memory", type=int, default=10_000, help="store: active memory items")
    parser.add_argument(
        "--compacted", action="store_true", help="store: a summary covers the seeded log and every agent has read it"
    )
    parser.add_argument(
        "--first-turn-timeout", type=float, default=900, help="store without --compacted: the first Turn's deadline, s"
    )
    parser.add_argument("--messages", type=int, help="store: Turns timed (30); sse: messages sent (200)")
    parser.add_argument("--clients", type=int, default=200, help="sse: SSE clients attached")
    parser.add_argument("--seconds", type=float, default=1800, help="soak: duration")
    parser.add_argument("--batch", type=int, default=60, help="soak: messages per batch")
    args = parser.parse_args(argv)
    args.messages = args.messages or (200 if args.figure == "sse" else 30)
    before = load()
    with tempfile.TemporaryDirectory(prefix=f"groupx-bench-scale-{args.figure}-") as scratch:
        result = FIGURES[args.figure](args, Path(scratch))
    print(json.dumps({"figure": args.figure, "loadAverageStart": before, "loadAverageEnd": load(), **result}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

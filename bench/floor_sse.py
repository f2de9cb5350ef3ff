"""Part 2b of ``python -m bench.floor``: the SSE floor, server CPU per event-stream frame.

A Turn reaches the harness's monitor as several SSE frames (queued, dispatched, started, the
content deltas, the reply, completed: part 1 counts them per Turn). The same servers as the HTTP
part (``bench.floor_http.serving``) answer ``GET /?n=N`` with N frames of a Turn event's size
(``bench.floor_apps.FRAME``), written back to back on one connection that this process reads to its
end; the server's CPU per frame is ``/proc/<pid>/stat`` before/after. Written back to back, the
frames may share a write (twisted's buffer, Node's, the kernel's): a lower bound for frames that
leave one at a time.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

from bench.floor_apps import FRAME
from bench.floor_http import run_layers, serving
from bench.memory import cpu_seconds

# (key, label): GroupX's event stream is a Channels consumer on daphne, not a Django view, so the
# bare servers are its floor.
LAYERS = (
    ("daphne_bare", "daphne (twisted; GroupX's request class) + a bare ASGI callable"),
    ("uvicorn_bare", "uvicorn (httptools, uvloop) + the bare ASGI callable"),
    ("node", "Node 24's own http server"),
)


def read_stream(port: int, frames: int) -> int:
    """Bytes of the body (with its chunk framing) of one ``GET /?n=frames``, read to the end."""
    total = 0
    with socket.create_connection(("127.0.0.1", port), timeout=60) as client:
        client.sendall(
            f"GET /?n={frames} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
            "Connection: close\r\n\r\n".encode()
        )
        while chunk := client.recv(1 << 16):
            total += len(chunk)
    if total < frames * len(FRAME):
        raise RuntimeError(f"the stream ended after {total} bytes, short of {frames} frames")
    return total


def measure(layer: str, node: Path | None, frames: int) -> dict:
    with serving(layer, node) as (proc, port):
        read_stream(port, frames // 10)  # warm-up
        before, started = cpu_seconds(proc.pid), time.perf_counter()
        read_stream(port, frames)
        elapsed, cpu = time.perf_counter() - started, cpu_seconds(proc.pid) - before
    return {
        "layer": layer,
        "frames": frames,
        "us_per_frame": round(cpu * 1e6 / frames, 2),
        "frames_per_s": round(frames / elapsed),
    }


def run(node: Path | None, frames: int, log) -> list[dict]:
    return run_layers(
        "sse",
        LAYERS,
        node,
        lambda layer: measure(layer, node, frames),
        lambda row: f"{row['us_per_frame']} µs of server CPU per frame ({row['frames_per_s']} frames/s)",
        log,
    )

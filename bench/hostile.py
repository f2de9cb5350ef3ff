"""What hostile input costs the server: ``python -m bench.hostile`` (the hostile-input work, docs/RELIABILITY.md).

Each case runs against a fresh real server (daphne, three instant fake agents) and reports the
server's peak RSS (VmHWM) before and after, and what the client got back:

- ``declared``: a POST announcing (and then really sending) a 200 MB body with a true
  ``Content-Length``;
- ``chunked``: the same 200 MB as a chunked body with no length;
- ``flood``: one agent's CLI streams 200 content deltas of 64 Ki characters (12.5 Mi characters)
  into one reply, far past the 1 Mi-character cap (docs/DECISIONS.md D23).

The figures are measurements for the notes, never assertions: tests check the codes.
"""

from __future__ import annotations

import argparse
import json
import socket
import tempfile
import time
from pathlib import Path

import httpx

from bench.memory import peak_rss
from bench.server import BenchServer

MB = 1_000_000
TERMINALS = {"turn.completed", "turn.failed", "turn.cancelled", "turn.interrupted"}
PIECE = b"x" * (1024 * 1024)


def upload(port: int, total: int, *, chunked: bool) -> dict:
    """Send a 200 MB body the way a careless client would and report what came back; the server
    may answer (and close) long before the body is all sent."""
    framing = b"Transfer-Encoding: chunked\r\n" if chunked else f"Content-Length: {total}\r\n".encode()
    head = b"POST /api/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + framing + b"\r\n"
    sent, started = 0, time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
        conn.sendall(head)
        try:
            while sent < total:
                piece = PIECE[: min(len(PIECE), total - sent)]
                conn.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n" if chunked else piece)
                sent += len(piece)
            if chunked:
                conn.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server refused and closed: the rest of the upload was never read
        answer = b""
        try:
            while chunk := conn.recv(65536):
                answer += chunk
        except OSError:
            pass
    status_line = answer.split(b"\r\n", 1)[0].decode(errors="replace")
    body = answer.partition(b"\r\n\r\n")[2]
    try:
        code = json.loads(body)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        code = None
    return {
        "status": status_line,
        "code": code,
        "bytesSentMB": round(sent / MB, 1),
        "seconds": round(time.monotonic() - started, 2),
    }


def flood(base_url: str) -> dict:
    """Ask the fake kimi for a 12.5 Mi-character reply and report how its Turn ended."""
    started = time.monotonic()
    accepted = httpx.post(
        f"{base_url}/api/messages",
        timeout=10,
        json={"clientCommandId": "bench-flood", "to": ["agent:kimi"], "content": "[[fake: flood chunk=65536 n=200]]"},
    ).json()
    turn_id = accepted["turns"][0]["turnId"]
    terminal = None
    while terminal is None and time.monotonic() - started < 300:
        events = httpx.get(f"{base_url}/api/bootstrap", timeout=10).json()["recentEvents"]
        terminal = next((e for e in events if e["type"] in TERMINALS and e["body"].get("turnId") == turn_id), None)
        time.sleep(0.1)  # a bench polling a server it does not control, not a test's synchronisation
    return {
        "terminal": terminal and terminal["type"],
        "code": terminal and terminal["body"].get("errorCode"),
        "seconds": round(time.monotonic() - started, 2),
    }


def run_case(name: str, workdir: Path, size: int) -> dict:
    server = BenchServer(workdir / name).start()
    try:
        before = peak_rss(server.proc.pid)["server"]["peakMiB"]
        if name == "flood":
            result = flood(server.base_url)
        else:
            result = upload(int(server.base_url.rsplit(":", 1)[1]), size, chunked=(name == "chunked"))
        after = peak_rss(server.proc.pid)["server"]["peakMiB"]
        return {"case": name, **result, "serverPeakMiBBefore": before, "serverPeakMiBAfter": after}
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="groupx-hostile-") as folder:
        for name in ("declared", "chunked", "flood"):
            print(json.dumps(run_case(name, Path(folder), args.size_mb * MB)), flush=True)


if __name__ == "__main__":
    main()

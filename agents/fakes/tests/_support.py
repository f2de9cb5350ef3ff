"""Shared helpers for the fake CLI tests (ACP, Codex, Claude): a JSONL child process driven over
real pipes and a stand-in for GroupX's stateless ``/mcp`` endpoint. Every wait is a condition with a
deadline (reader thread + queue), never a fixed sleep.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

BIN = Path(__file__).resolve().parents[1] / "bin"
DEADLINE = 10.0


class LineProc:
    """One fake CLI child; ``wait_for`` is the only way to wait for output."""

    def __init__(self, shim: str, argv: list[str], env: dict[str, str], cwd: Path):
        self.proc = subprocess.Popen(
            [str(BIN / shim), *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        self.items: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.seen: list[Any] = []
        self.stderr: list[bytes] = []
        threading.Thread(target=self._read_stdout, daemon=True).start()
        self._stderr_thread = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_thread.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                self.items.put(("msg", json.loads(raw)))
            except ValueError:
                self.items.put(("raw", raw))
        self.items.put(("eof", None))

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.stderr.append(raw)

    def send(self, obj: Any) -> None:
        self.send_raw(json.dumps(obj).encode() + b"\n")

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def wait_for(self, pred: Callable[[Any], bool], timeout: float = DEADLINE, raw: bool = False) -> Any:
        """Next item matching ``pred``; every item read on the way is kept in ``seen``."""
        try:
            while True:
                kind, item = self.items.get(timeout=timeout)
                if kind == "eof":
                    self.items.put((kind, item))  # keep EOF visible to later waits
                    raise AssertionError(f"fake exited rc={self.proc.poll()} stderr={b''.join(self.stderr)!r}")
                self.seen.append(item)
                if (kind == "raw") == raw and pred(item):
                    return item
        except queue.Empty:
            raise AssertionError(f"timed out; seen so far: {self.seen[-5:]}") from None

    def collect_until(self, pred: Callable[[Any], bool], timeout: float = DEADLINE) -> list[Any]:
        """Every frame up to and including the first one matching ``pred``."""
        start = len(self.seen)
        self.wait_for(pred, timeout)
        return [m for m in self.seen[start:] if isinstance(m, dict)]

    def wait_eof(self, timeout: float = DEADLINE) -> list[Any]:
        """Frames until stdout closes (the child exited or closed it)."""
        out = []
        try:
            while True:
                kind, item = self.items.get(timeout=timeout)
                if kind == "eof":
                    self.items.put((kind, item))
                    return out
                self.seen.append(item)
                out.append(item)
        except queue.Empty:
            raise AssertionError(f"no EOF; seen so far: {self.seen[-5:]}") from None

    def wait_exit(self, timeout: float = DEADLINE) -> int:
        return self.proc.wait(timeout=timeout)

    def stderr_text(self, timeout: float = DEADLINE) -> str:
        """All of stderr; only complete once the child has exited (the reader hits EOF)."""
        self._stderr_thread.join(timeout)
        return b"".join(self.stderr).decode("utf-8", "replace")

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.close_stdin()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)


def fake_env(log_dir: Path, state_dir: Path, scenario: dict[str, Any] | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUPX_FAKE_")}
    env.update(GROUPX_FAKE_LOG_DIR=str(log_dir), GROUPX_FAKE_STATE_DIR=str(state_dir), **extra)
    if scenario is not None:
        env["GROUPX_FAKE_SCENARIO"] = json.dumps(scenario)
    return env


class GroupxMcpStub(BaseHTTPRequestHandler):
    """GroupX's stateless /mcp: the streamable-HTTP ``Accept`` check (406), the binding header check
    (400 MCP_BINDING_MISMATCH), JSON replies, or SSE ones for tool calls when ``sse`` is set."""

    calls: list[dict[str, Any]] = []
    bindings: list[str | None] = []
    good_binding = "bind-ok"
    sse = False

    def log_message(self, *_args: Any) -> None:
        pass

    def _send(self, status: int, msg: dict[str, Any] | None, sse: bool = False) -> None:
        body = b"" if msg is None else json.dumps(msg).encode()
        if sse and msg is not None:
            body = b"event: message\ndata: " + body + b"\n\n"
        self.send_response(status)
        self.send_header("Content-Type", "text/event-stream" if sse else "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        msg = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        accept = self.headers.get("Accept", "")
        if "application/json" not in accept or "text/event-stream" not in accept:
            self._send(406, None)
            return
        binding = self.headers.get("X-GroupX-Binding")
        type(self).bindings.append(binding)
        if binding != self.good_binding:
            self._send(
                400,
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": -32602, "message": "bad binding", "data": {"code": "MCP_BINDING_MISMATCH"}},
                },
            )
            return
        if "id" not in msg:
            self._send(202, None)
            return
        method = msg.get("method")
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "groupx", "version": "0"},
            }
        elif method == "tools/list":
            result = {
                "tools": [
                    {"name": "publish", "inputSchema": {"type": "object"}},
                    {"name": "send", "inputSchema": {"type": "object"}},
                ]
            }
        else:
            type(self).calls.append(msg["params"])
            result = {
                "content": [{"type": "text", "text": '{"messageEventId":"evt-1"}'}],
                "structuredContent": {"messageEventId": "evt-1"},
            }
        self._send(
            200, {"jsonrpc": "2.0", "id": msg["id"], "result": result}, sse=type(self).sse and method == "tools/call"
        )


def start_mcp_stub(*, sse: bool = False) -> tuple[ThreadingHTTPServer, str]:
    GroupxMcpStub.calls = []
    GroupxMcpStub.bindings = []
    GroupxMcpStub.sse = sse
    server = ThreadingHTTPServer(("127.0.0.1", 0), GroupxMcpStub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/mcp"

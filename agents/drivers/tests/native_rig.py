"""A rig for driving the Codex and Claude drivers against their fake CLIs (agents/fakes/bin/) and
reading the fakes' wire logs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agents.drivers.base import DriverError, LaunchProfile, McpAttachment, NativeSession, NativeTurn, Timeouts
from agents.drivers.claude import ClaudeDriver
from agents.drivers.codex import CodexDriver
from agents.fakes import wirelog

FAKES = Path(__file__).resolve().parents[2] / "fakes"
MCP = McpAttachment(url="http://127.0.0.1:9/mcp", binding_id="bind-test-1")
TIMEOUTS = Timeouts(handshake_ms=5_000, request_ms=2_000, cancel_ms=5_000, close_ms=2_000)
EVENT_DEADLINE = 15.0
DRIVERS = {"codex": CodexDriver, "claude": ClaudeDriver}


class NativeRig:
    """Starts one fake CLI flavour (codex or claude) through its driver."""

    def __init__(self, tmp_path: Path, flavor: str):
        self.flavor = flavor
        self.log_dir = tmp_path / "wire"
        self.state_dir = tmp_path / "state"
        self.cwd = tmp_path / "work"
        self.cwd.mkdir()
        self.sessions: list[NativeSession] = []

    def profile(self, scenario: dict[str, Any] | None = None, *, mcp: McpAttachment | None = MCP,
                timeouts: Timeouts = TIMEOUTS, env: dict[str, str] | None = None) -> LaunchProfile:
        env = {"GROUPX_FAKE_LOG_DIR": str(self.log_dir), "GROUPX_FAKE_STATE_DIR": str(self.state_dir),
               "GROUPX_FAKE_SCENARIO": json.dumps(scenario or {}), **(env or {})}
        return LaunchProfile(agent_id=self.flavor, actor_id=f"agent:{self.flavor}", driver=self.flavor,
                             command=(str(FAKES / "bin" / self.flavor),), cwd=str(self.cwd),
                             instance_id=f"inst-{uuid.uuid4().hex[:6]}", binding_id=MCP.binding_id, mcp=mcp,
                             timeouts=timeouts, env=env)

    async def start(self, scenario: dict[str, Any] | None = None, *, resume: str | None = None,
                    **kwargs: Any) -> Any:
        session = await DRIVERS[self.flavor]().start(self.profile(scenario, **kwargs),
                                                     resume_native_session_id=resume)
        self.sessions.append(session)
        return session

    async def start_fails(self, scenario: dict[str, Any] | None = None, **kwargs: Any) -> DriverError:
        with pytest.raises(DriverError) as caught:
            await self.start(scenario, **kwargs)
        return caught.value

    async def close_all(self) -> None:
        await asyncio.gather(*(session.close() for session in self.sessions))

    def records(self, session: Any = None, **filters: Any) -> list[dict[str, Any]]:
        if session is not None:
            filters["pid"] = session.process.pid
        return wirelog.read_records(self.log_dir, flavor=self.flavor, **filters)

    def inbound(self, session: Any = None, **filters: Any) -> list[dict[str, Any]]:
        return [r["msg"] for r in self.records(session, kind="in", **filters)]

    def checks(self, session: Any, name: str) -> list[dict[str, Any]]:
        return self.records(session, kind="check", name=name)

    def check_ok(self, session: Any, name: str) -> bool:
        found = self.checks(session, name)
        return bool(found) and all(r["ok"] for r in found)

    def no_failed_checks(self, session: Any) -> list[dict[str, Any]]:
        return [r for r in self.records(session, kind="check") if not r["ok"]]

    async def wait_record(self, session: Any, predicate: Any, what: str, timeout: float = 5.0) -> dict[str, Any]:
        """Wait (with a deadline) for a wire-log record the fake writes after our frame arrives."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            found = [r for r in self.records(session) if predicate(r)]
            if found:
                return found[0]
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}")
            await asyncio.sleep(0.02)


async def run_turn(session: NativeSession, text: str) -> tuple[NativeTurn, list]:
    turn = await session.start_turn(f"turn-{uuid.uuid4().hex[:6]}", text)
    return turn, await collect(turn)


async def collect(turn: NativeTurn, *, until: type | None = None) -> list:
    """Events up to the terminal (or up to the first ``until`` event), with a deadline."""
    events: list = []

    async def pump() -> None:
        async for event in turn.events():
            events.append(event)
            if until is not None and isinstance(event, until):
                return

    await asyncio.wait_for(pump(), EVENT_DEADLINE)
    return events


def texts(events: list, kind: type) -> list[str]:
    return [e.text for e in events if isinstance(e, kind)]


class _McpHandler(BaseHTTPRequestHandler):
    """Just enough of a stateless JSON-response MCP endpoint for a CLI's startup probe."""

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        self.server.bindings.append(self.headers.get("X-GroupX-Binding"))  # type: ignore[attr-defined]
        if "id" not in message:
            self.send_response(202)
            self.end_headers()
            return
        result: dict[str, Any] = {"tools": []}
        if message.get("method") == "initialize":
            result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "groupx-test", "version": "0"}}
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        pass


@contextlib.contextmanager
def mcp_endpoint() -> Iterator[tuple[McpAttachment, list[str | None]]]:
    """A loopback MCP endpoint; yields its attachment and the binding header of every request."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _McpHandler)
    server.bindings = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/mcp"
        yield McpAttachment(url=url, binding_id=MCP.binding_id), server.bindings  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()

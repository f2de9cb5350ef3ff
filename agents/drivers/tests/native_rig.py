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

from agents.drivers.base import LaunchProfile, McpAttachment, Timeouts
from agents.drivers.claude import ClaudeDriver
from agents.drivers.codex import CodexDriver

from ._rig import FAKES, MCP, TIMEOUTS, FakeCliRig

DRIVERS = {"codex": CodexDriver, "claude": ClaudeDriver}


class NativeRig(FakeCliRig):
    """Starts one fake CLI flavour (codex or claude) through its driver."""

    def __init__(self, tmp_path: Path, flavor: str):
        super().__init__(tmp_path)
        self.flavor = flavor
        self.wire_flavor = flavor

    def profile(
        self,
        scenario: dict[str, Any] | None = None,
        *,
        mcp: McpAttachment | None = MCP,
        timeouts: Timeouts = TIMEOUTS,
        env: dict[str, str] | None = None,
        private_dir: str | None = None,
    ) -> LaunchProfile:
        env = {**self.fake_env(scenario), **(env or {})}
        return LaunchProfile(
            agent_id=self.flavor,
            actor_id=f"agent:{self.flavor}",
            driver=self.flavor,
            command=(str(FAKES / "bin" / self.flavor),),
            cwd=str(self.cwd),
            instance_id=f"inst-{uuid.uuid4().hex[:6]}",
            binding_id=MCP.binding_id,
            mcp=mcp,
            timeouts=timeouts,
            env=env,
            private_dir=private_dir,
        )

    async def start(self, scenario: dict[str, Any] | None = None, *, resume: str | None = None, **kwargs: Any) -> Any:
        session = await DRIVERS[self.flavor]().start(self.profile(scenario, **kwargs), resume_native_session_id=resume)
        self.sessions.append(session)
        return session

    async def close_all(self) -> None:
        await asyncio.gather(*(session.close() for session in self.sessions))

    def checks(self, session: Any, name: str) -> list[dict[str, Any]]:
        return self.records(session, kind="check", name=name)

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
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "groupx-test", "version": "0"},
            }
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

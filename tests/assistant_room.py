"""Helpers for the room assistant's tests: a room whose assistant's brain is a fake CLI over its
real wire, and the side chat's calls."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import httpx

from tests.agents import fake_agents
from tests.server import FAKES_BIN, GroupXServer, wait_until


def assistant_config(workdir: Path, driver: str = "claude", **extra) -> dict:
    cwd = workdir / "cwd-assistant"
    cwd.mkdir(parents=True, exist_ok=True)
    return {"enabled": True, "brain": {"driver": driver, "command": str(FAKES_BIN / driver), "cwd": str(cwd)}, **extra}


def assistant_room(
    workdir: Path, *drivers: str, assistant: dict | None = None, agents_extra: dict | None = None, **config
) -> GroupXServer:
    """A started room with fake agents named after ``drivers`` and an assistant (claude brain)."""
    document = {
        "agents": {**fake_agents(workdir, *drivers), **(agents_extra or {})},
        "timeouts": {"closeMs": 300},
        "assistant": assistant or assistant_config(workdir),
        **config,
    }
    server = GroupXServer(workdir, document).start()
    wait_until(
        lambda: server.get("/api/assistant").json()["status"] not in ("disabled", "starting"),
        timeout=60,
        message="the assistant's brain to start",
    )
    return server


def say(server: GroupXServer, content: str, command_id: str | None = None, timeout: float = 120) -> httpx.Response:
    body = {"clientCommandId": command_id or f"side-{uuid.uuid4()}", "content": content}
    return server.post("/api/assistant/messages", body, timeout=timeout)


def in_background(fn):
    """Run ``fn`` in a thread; returns a getter that joins it and gives its result."""
    results: list = []
    worker = threading.Thread(target=lambda: results.append(fn()))
    worker.start()

    def result():
        worker.join(timeout=300)
        assert results, "the background request did not finish"
        return results[0]

    return result


def directive(tool: str, args: str = "{}") -> str:
    return f"[[fake: mcp tool={tool} args='{args}']]"


def operate(server: GroupXServer, tool: str, args: dict) -> dict:
    """The brain (the fake CLI) calls the operator tool ``tool`` with ``args`` over its real MCP
    client; returns what the tool answered, as the CLI received it."""
    import json

    from tests.agents import mcp_calls, tool_payload

    before = len(mcp_calls(server, "claude", tool))
    answer = say(server, directive(tool, json.dumps(args, ensure_ascii=False)))
    assert answer.status_code == 200, answer.text
    calls = mcp_calls(server, "claude", tool)
    assert len(calls) == before + 1, answer.text
    return tool_payload(calls[-1])


def post_operator(server: GroupXServer, binding: str | None, method: str = "tools/list", params: dict | None = None):
    """A raw streamable-HTTP request to /mcp/operator with the given binding header."""
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    if binding is not None:
        headers["X-GroupX-Binding"] = binding
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    return httpx.post(server.url("/mcp/operator"), json=body, headers=headers, timeout=30)

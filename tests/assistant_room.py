"""Helpers for the room assistant's tests: a room whose assistant's brain is a fake CLI over its
real wire, and the side chat's calls."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx

from tests.agents import fake_agents
from tests.server import FAKES_BIN, GroupXServer, wait_until


def assistant_config(workdir: Path, driver: str = "claude", **extra) -> dict:
    cwd = workdir / "cwd-assistant"
    cwd.mkdir(parents=True, exist_ok=True)
    return {"enabled": True, "brain": {"driver": driver, "command": str(FAKES_BIN / driver), "cwd": str(cwd)}, **extra}


def assistant_room(workdir: Path, *drivers: str, assistant: dict | None = None, **config) -> GroupXServer:
    """A started room with fake agents named after ``drivers`` and an assistant (claude brain)."""
    document = {"agents": fake_agents(workdir, *drivers), "timeouts": {"closeMs": 300},
                "assistant": assistant or assistant_config(workdir), **config}
    server = GroupXServer(workdir, document).start()
    wait_until(lambda: server.get("/api/assistant").json()["status"] not in ("disabled", "starting"),
               timeout=60, message="the assistant's brain to start")
    return server


def say(server: GroupXServer, content: str, command_id: str | None = None, timeout: float = 120) -> httpx.Response:
    body = {"clientCommandId": command_id or f"side-{uuid.uuid4()}", "content": content}
    return server.post("/api/assistant/messages", body, timeout=timeout)


def directive(tool: str, args: str = "{}") -> str:
    return f"[[fake: mcp tool={tool} args='{args}']]"

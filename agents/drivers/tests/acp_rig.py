"""A rig for driving AcpDriver against the fake ACP CLI and reading its wire log."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from agents.drivers.acp import AcpDriver
from agents.drivers.acp_session import AcpSession
from agents.drivers.base import DriverError, LaunchProfile, McpAttachment, NativeTurn, Timeouts
from agents.fakes import wirelog

FAKES = Path(__file__).resolve().parents[2] / "fakes"
MCP = McpAttachment(url="http://127.0.0.1:9/mcp", binding_id="bind-test-1")
TIMEOUTS = Timeouts(handshake_ms=5_000, request_ms=2_000, cancel_ms=5_000, close_ms=2_000)
EVENT_DEADLINE = 15.0


class Rig:
    """Starts fake agents through the driver and reads their wire logs."""

    def __init__(self, tmp_path: Path):
        self.log_dir = tmp_path / "wire"
        self.state_dir = tmp_path / "state"
        self.cwd = tmp_path / "work"
        self.cwd.mkdir()
        self.sessions: list[AcpSession] = []

    def profile(self, flavor: str, scenario: dict[str, Any] | None = None, *, mcp: McpAttachment | None = MCP,
                timeouts: Timeouts = TIMEOUTS) -> LaunchProfile:
        if flavor == "generic":
            command: tuple[str, ...] = (sys.executable, str(FAKES / "fake_acp.py"))
        else:
            command = (str(FAKES / "bin" / flavor),)
        env = {"GROUPX_FAKE_LOG_DIR": str(self.log_dir), "GROUPX_FAKE_STATE_DIR": str(self.state_dir),
               "GROUPX_FAKE_SCENARIO": json.dumps(scenario or {})}
        return LaunchProfile(agent_id=flavor, actor_id=f"agent:{flavor}", driver=flavor, command=command,
                             cwd=str(self.cwd), instance_id=f"inst-{uuid.uuid4().hex[:6]}",
                             binding_id=MCP.binding_id, mcp=mcp, timeouts=timeouts, env=env)

    async def start(self, flavor: str, scenario: dict[str, Any] | None = None, *,
                    resume: str | None = None, **kwargs: Any) -> AcpSession:
        session = await AcpDriver(flavor).start(self.profile(flavor, scenario, **kwargs),
                                                resume_native_session_id=resume)
        assert isinstance(session, AcpSession)
        self.sessions.append(session)
        return session

    async def start_fails(self, flavor: str, scenario: dict[str, Any] | None = None, **kwargs: Any) -> DriverError:
        with pytest.raises(DriverError) as caught:
            await self.start(flavor, scenario, **kwargs)
        return caught.value

    def records(self, session: AcpSession | None = None, **filters: Any) -> list[dict[str, Any]]:
        if session is not None:
            assert session.process is not None
            filters["pid"] = session.process.pid
        return wirelog.read_records(self.log_dir, **filters)

    def inbound(self, session: AcpSession | None = None, **filters: Any) -> list[dict[str, Any]]:
        return [r["msg"] for r in self.records(session, kind="in", **filters)]

    def methods(self, session: AcpSession | None = None, **filters: Any) -> list[str]:
        return [m["method"] for m in self.inbound(session, **filters) if "method" in m]

    def check_ok(self, session: AcpSession, name: str) -> bool:
        found = self.records(session, kind="check", name=name)
        return bool(found) and all(r["ok"] for r in found)


async def run_turn(session: AcpSession, text: str, *, until: type | None = None) -> tuple[NativeTurn, list]:
    turn = await session.start_turn(f"turn-{uuid.uuid4().hex[:6]}", text)
    return turn, await collect(turn, until=until)


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


async def rest_of(turn: NativeTurn) -> list:
    return await collect(turn)

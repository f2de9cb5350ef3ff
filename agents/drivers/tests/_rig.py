"""What the ACP rig (acp_rig.py) and the Codex/Claude rig (native_rig.py) share: the fakes'
location, the test timeouts and MCP attachment, reading a fake's wire log, and collecting a
turn's events with a deadline. Each rig adds how its driver is started."""

from __future__ import annotations

import abc
import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from agents.drivers.base import DriverError, McpAttachment, NativeSession, NativeTurn, Timeouts
from agents.fakes import wirelog

FAKES = Path(__file__).resolve().parents[2] / "fakes"
MCP = McpAttachment(url="http://127.0.0.1:9/mcp", binding_id="bind-test-1")
TIMEOUTS = Timeouts(handshake_ms=5_000, request_ms=2_000, cancel_ms=5_000, close_ms=2_000)
EVENT_DEADLINE = 15.0


class FakeCliRig(abc.ABC):
    """Directories for the fakes' wire logs and state, the agent's cwd, and the wire-log readers.
    ``wire_flavor`` narrows the log to one fake CLI (None: every fake this rig started)."""

    wire_flavor: str | None = None

    def __init__(self, tmp_path: Path):
        self.log_dir = tmp_path / "wire"
        self.state_dir = tmp_path / "state"
        self.cwd = tmp_path / "work"
        self.cwd.mkdir()
        self.sessions: list[Any] = []

    def fake_env(self, scenario: dict[str, Any] | None) -> dict[str, str]:
        """How a fake learns where to log, where to keep state, and what to play."""
        return {
            "GROUPX_FAKE_LOG_DIR": str(self.log_dir),
            "GROUPX_FAKE_STATE_DIR": str(self.state_dir),
            "GROUPX_FAKE_SCENARIO": json.dumps(scenario or {}),
        }

    @abc.abstractmethod
    async def start(self, *args: Any, **kwargs: Any) -> Any:
        """Start the rig's driver against its fake CLI (each rig knows its own argv and options)."""

    async def start_fails(self, *args: Any, **kwargs: Any) -> DriverError:
        with pytest.raises(DriverError) as caught:
            await self.start(*args, **kwargs)
        return caught.value

    def records(self, session: Any = None, **filters: Any) -> list[dict[str, Any]]:
        if session is not None:
            assert session.process is not None
            filters["pid"] = session.process.pid
        filters.setdefault("flavor", self.wire_flavor)
        return wirelog.read_records(self.log_dir, **filters)

    def inbound(self, session: Any = None, **filters: Any) -> list[dict[str, Any]]:
        return [r["msg"] for r in self.records(session, kind="in", **filters)]

    def check_ok(self, session: Any, name: str) -> bool:
        found = self.records(session, kind="check", name=name)
        return bool(found) and all(r["ok"] for r in found)


async def run_turn(session: NativeSession, text: str, *, until: type | None = None) -> tuple[NativeTurn, list]:
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


def texts(events: list, kind: type) -> list[str]:
    return [e.text for e in events if isinstance(e, kind)]

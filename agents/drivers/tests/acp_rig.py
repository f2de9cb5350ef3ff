"""A rig for driving AcpDriver against the fake ACP CLI and reading its wire log."""

from __future__ import annotations

import sys
import uuid
from typing import Any

from agents.drivers.acp import AcpDriver
from agents.drivers.acp_session import AcpSession
from agents.drivers.base import LaunchProfile, McpAttachment, NativeTurn, Timeouts

from ._rig import FAKES, MCP, TIMEOUTS, FakeCliRig, collect


class Rig(FakeCliRig):
    """Starts fake agents of any ACP flavour through the driver and reads their wire logs."""

    def profile(
        self,
        flavor: str,
        scenario: dict[str, Any] | None = None,
        *,
        mcp: McpAttachment | None = MCP,
        timeouts: Timeouts = TIMEOUTS,
    ) -> LaunchProfile:
        if flavor == "generic":
            command: tuple[str, ...] = (sys.executable, str(FAKES / "fake_acp.py"))
        else:
            command = (str(FAKES / "bin" / flavor),)
        return LaunchProfile(
            agent_id=flavor,
            actor_id=f"agent:{flavor}",
            driver=flavor,
            command=command,
            cwd=str(self.cwd),
            instance_id=f"inst-{uuid.uuid4().hex[:6]}",
            binding_id=MCP.binding_id,
            mcp=mcp,
            timeouts=timeouts,
            env=self.fake_env(scenario),
        )

    async def start(
        self, flavor: str, scenario: dict[str, Any] | None = None, *, resume: str | None = None, **kwargs: Any
    ) -> AcpSession:
        session = await AcpDriver(flavor).start(
            self.profile(flavor, scenario, **kwargs), resume_native_session_id=resume
        )
        assert isinstance(session, AcpSession)
        self.sessions.append(session)
        return session

    def methods(self, session: AcpSession | None = None, **filters: Any) -> list[str]:
        return [m["method"] for m in self.inbound(session, **filters) if "method" in m]


async def rest_of(turn: NativeTurn) -> list:
    return await collect(turn)

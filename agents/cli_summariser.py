"""The summariser memory asks for (``memory.summariser``, docs/DECISIONS.md D33): each request runs
in a separate, short-lived CLI process of the requested agent, started through the driver registry
like ``agents/sessions.py`` does for an agent's lane, but with ``mcp=None`` and no binding
registered. It cannot call tools, cannot write to the room, and never shares (or disturbs) the
native session that answers the agent's Turns. Nothing is written to the store here and no
``session.*`` event is emitted: this is not a room member's session.

The turn's events are read by the lanes' own routine (``agents.turn_collector``), with the same
caps (D23).
"""

from __future__ import annotations

import logging
import secrets

from django.conf import settings

from agents import health, turn_collector
from agents.drivers.base import DriverError, LaunchProfile, Timeouts
from agents.drivers.registry import get_driver
from agents.sessions import launch_place
from agents.turn_collector import Collected, TurnHooks
from memory.summariser import SummariserError, SummaryRequest, set_readiness, set_summariser

logger = logging.getLogger("groupx.agents.summariser")


class _OneShotHooks(TurnHooks):
    def __init__(self, turn):
        self.turn = turn

    async def timed_out(self, heard: bool) -> None:
        await self.turn.cancel()


class CliSummariser:
    """``memory.summariser.Summariser`` with a one-shot, MCP-free CLI session per request."""

    async def summarise(self, request: SummaryRequest) -> str:
        try:
            return await self._run(request)
        except DriverError as error:
            raise SummariserError(error.code, error.message) from error

    async def _run(self, request: SummaryRequest) -> str:
        agent = request.agent
        command, ssh = launch_place(agent)  # DriverError(ADAPTER_NOT_FOUND) becomes a SummariserError
        timeouts = settings.GROUPX_CONFIG.timeouts
        tag = secrets.token_hex(6)
        profile = LaunchProfile(
            agent_id=agent.agent_id,
            actor_id=agent.actor_id,
            driver=agent.driver,
            command=command,
            cwd=agent.cwd,
            instance_id=f"{agent.agent_id}/{request.purpose}@{tag}",
            binding_id="",
            mcp=None,
            timeouts=Timeouts(
                handshake_ms=timeouts.handshakeMs,
                request_ms=timeouts.requestMs,
                cancel_ms=timeouts.cancelMs,
                close_ms=timeouts.closeMs,
            ),
            ssh=ssh,
        )
        session = await get_driver(agent.driver).start(profile)
        try:
            turn = await session.start_turn(f"{request.purpose}_{tag}", request.prompt)
            ending = await turn_collector.collect(
                turn,
                Collected(),
                _OneShotHooks(turn),
                first_event_s=request.first_event_ms / 1000,
                idle_s=request.idle_ms / 1000,
                logger=logger,
                label=f"{agent.actor_id}: {request.purpose}",
            )
        finally:
            await session.close()
        if ending.kind == turn_collector.COMPLETED:
            return ending.content
        if ending.kind == turn_collector.CANCELLED:
            raise SummariserError("TURN_INTERRUPTED", "the turn was cancelled")
        raise SummariserError(ending.code, ending.message or f"the CLI's {ending.what} passed its cap")


def session_is_up(actor_id: str) -> bool:
    return health.snapshot(actor_id).get("status") == "ready"


def register() -> None:
    set_summariser(CliSummariser())
    set_readiness(session_is_up)  # automatic compaction asks only agents whose session is up

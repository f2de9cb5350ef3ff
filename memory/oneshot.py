"""Short-lived, MCP-free native sessions for GroupX's own prompts: room summaries and dated
memory rollups (FEATURES §14, §15.3).

Each run launches a separate CLI process through the driver registry, exactly like
``agents/sessions.py`` does for an agent's lane, but with ``mcp=None`` and no binding registered:
the summariser cannot call tools, cannot write to the room, and never shares (or disturbs) the
native session that answers the agent's Turns. Nothing is written to the store here and no
``session.*`` event is emitted: this is not a room member's session.
"""

from __future__ import annotations

import asyncio
import secrets

from django.conf import settings

from agents.drivers.base import (
    ContentDelta,
    DriverError,
    LaunchProfile,
    Timeouts,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
)
from agents.drivers.registry import get_driver
from setup_wizard.config import ResolvedAgent, resolve_executable

# Failures worth an immediate retry: the CLI did not start, shake hands or answer in time, or the
# run was cut off (FEATURES §14 "Retry"). A wrong answer, a native interaction or a policy block is
# not retried.
TRANSIENT_CODES = frozenset({
    "ADAPTER_START_FAILED", "PROTOCOL_HANDSHAKE_TIMEOUT", "SESSION_NOT_AVAILABLE", "TURN_FIRST_EVENT_TIMEOUT",
    "TURN_IDLE_TIMEOUT", "TURN_INTERRUPTED",
})


async def run_prompt(agent: ResolvedAgent, prompt: str, *, purpose: str) -> str:
    """Start ``agent``'s CLI without MCP, send ``prompt`` as one turn, return the final text.
    Raises DriverError (``code`` tells whether a retry makes sense: ``TRANSIENT_CODES``)."""
    command = resolve_executable(agent.command)
    if command is None:
        raise DriverError("ADAPTER_NOT_FOUND", f"the command {agent.command[0]!r} was not found", retryable=False)
    timeouts = settings.GROUPX_CONFIG.timeouts
    tag = secrets.token_hex(6)
    profile = LaunchProfile(
        agent_id=agent.agent_id, actor_id=agent.actor_id, driver=agent.driver, command=command, cwd=agent.cwd,
        instance_id=f"{agent.agent_id}/{purpose}@{tag}", binding_id="", mcp=None,
        timeouts=Timeouts(handshake_ms=timeouts.handshakeMs, request_ms=timeouts.requestMs,
                          cancel_ms=timeouts.cancelMs, close_ms=timeouts.closeMs),
    )
    session = await get_driver(agent.driver).start(profile)
    try:
        turn = await session.start_turn(f"{purpose}_{tag}", prompt)
        chunks: list[str] = []
        stream = turn.events().__aiter__()
        started = False
        while True:
            wait = (timeouts.idleMs if started else timeouts.firstEventMs) / 1000
            try:
                event = await asyncio.wait_for(stream.__anext__(), timeout=wait)
            except StopAsyncIteration:
                raise DriverError("PROTOCOL_INVALID_MESSAGE", "the turn ended without a terminal event",
                                  retryable=False) from None
            except TimeoutError:
                await turn.cancel()
                code = "TURN_IDLE_TIMEOUT" if started else "TURN_FIRST_EVENT_TIMEOUT"
                raise DriverError(code, f"no answer within {wait:g} s", retryable=True) from None
            started = True
            if isinstance(event, ContentDelta):
                chunks.append(event.text)
            elif isinstance(event, TurnCompleted):
                return event.content if event.content is not None else "".join(chunks)
            elif isinstance(event, TurnFailed):
                raise DriverError(event.error_code, event.message or "the turn failed",
                                  retryable=event.error_code in TRANSIENT_CODES)
            elif isinstance(event, TurnCancelled):
                raise DriverError("TURN_INTERRUPTED", "the turn was cancelled", retryable=True)
    finally:
        await session.close()


def is_transient(error: DriverError) -> bool:
    return error.code in TRANSIENT_CODES

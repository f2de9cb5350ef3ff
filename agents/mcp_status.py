"""Whether an agent's GroupX MCP is usable, as its CLI reports it (docs/DECISIONS.md D11, D98).

A session is recorded ``mcp: verified`` when it starts with the MCP descriptor (D11), unless its
CLI has already said the GroupX server failed. Codex (``mcpServer/startupStatus/updated``) and
Claude Code (``system/init``'s ``mcp_servers``) may say so later, during a Turn: the lane then
brings the binding's record in step after that Turn, so the member MCP server answers the CLI's
next call with 503 ``MCP_UNAVAILABLE`` (PROTOCOL §14, FEATURES §11) and the agent's card shows
MCP unverified; a later report that it connected records it verified again.
"""

from __future__ import annotations

import logging

from agents import health, instances
from agents.drivers.base import NativeSession
from groupx_site.store import db

logger = logging.getLogger("groupx.agents.mcp")


def reported_failed(session: NativeSession) -> bool:
    # Only Codex and Claude Code report it (``mcp_status``); an ACP session without usable MCP is
    # refused at initialize instead.
    return getattr(session, "mcp_status", None) == "failed"


async def keep_binding_in_step(sessions) -> None:
    """Record the session's MCP as its CLI last reported it, when that changed (rare: one compare
    per Turn otherwise). ``sessions``: the lane's ``AgentSessions``."""
    session, binding_id = sessions.session, sessions.binding_id
    if session is None or binding_id is None:
        return
    verified = not reported_failed(session)
    if verified == sessions.mcp_recorded:
        return
    await db.write(instances.record_mcp)(binding_id, verified)
    sessions.mcp_recorded = verified
    health.update(sessions.agent.actor_id, mcpVerified=verified)
    if not verified:
        logger.warning(
            "%s: the CLI reports the GroupX MCP server failed; its tool calls get MCP_UNAVAILABLE",
            sessions.agent.actor_id,
        )

"""``POST /api/agents/{actorId}/restart`` (FEATURES §3, §5): the web binding asks for an agent's
CLI to be replaced; the answer is 202 and SSE brings what happened (agents/restart.py)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from agents.restart import accept_restart
from agents.schemas import RestartAccepted, RestartBody
from groupx_site.core.contract import route
from groupx_site.core.ids import WEB_BINDING_ID
from groupx_site.core.json_response import json_response
from groupx_site.store import db

router = Router(tags=["agents"])


# The actorId is looked up after the body (the protocol's order): an id that is no agent is
# UNKNOWN_ACTOR, an agent this room does not run (disabled, not started) UNKNOWN_TARGET.
@router.post(
    "/agents/{actor_id}/restart",
    summary="Restart one agent's CLI now: a new instance; its running Turn is interrupted, queued ones wait",
    **route(
        {202: RestartAccepted},
        write=True,
        body=True,
        errors={404: ("UNKNOWN_ACTOR", "UNKNOWN_TARGET"), 409: ("CLIENT_COMMAND_CONFLICT",)},
    ),
)
async def post_restart(request: HttpRequest, actor_id: str, body: RestartBody):
    return json_response(await db.write(accept_restart)(WEB_BINDING_ID, actor_id, body.checked), 202)

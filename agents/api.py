"""``POST /api/agents/{actorId}/restart`` (FEATURES §3, §5): the web binding asks for an agent's
CLI to be replaced; the answer is 202 and SSE brings what happened (agents/restart.py)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from agents.restart import restart_agent
from groupx_site.core import db
from groupx_site.core.http import json_body
from groupx_site.core.ids import WEB_BINDING_ID

router = Router(tags=["agents"])


@router.post("/agents/{actor_id}/restart", response={202: dict},
             summary="Restart one agent's CLI now: a new instance; its running Turn is interrupted, queued ones wait")
async def post_restart(request: HttpRequest, actor_id: str):
    return 202, await db.write(restart_agent)(WEB_BINDING_ID, actor_id, json_body(request))

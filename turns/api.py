"""``POST /api/turns/{turnId}/cancel`` (PROTOCOL §10.3): express the intent; SSE brings the outcome."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from groupx_site.core import db
from groupx_site.core.http import json_body
from turns.actions import cancel_turn

router = Router(tags=["turns"])


@router.post("/turns/{turn_id}/cancel", response={202: dict}, summary="Ask to cancel a Turn")
async def post_cancel(request: HttpRequest, turn_id: str):
    return 202, await db.write(cancel_turn)(turn_id, json_body(request))

"""``POST /api/turns/{turnId}/cancel`` (PROTOCOL §10.3): express the intent; SSE brings the outcome."""

from __future__ import annotations

import re

from django.db import transaction
from django.http import HttpRequest
from ninja import Router

from agents.models import WEB_BINDING_ID
from groupx_site import db
from groupx_site.errors import GroupXError, invalid
from groupx_site.middleware import json_body
from rooms import commands, validation
from turns import lifecycle
from turns.models import Turn

router = Router(tags=["turns"])
TURN_ID = re.compile(r"^turn_[A-Za-z0-9]{1,64}$")


def cancel_turn(turn_id: str, payload) -> dict:
    payload = validation.reject_sender_fields(payload)
    validation.reject_unknown_keys(payload, {"clientCommandId"})
    client_command_id = validation.client_command_id(payload)
    if not TURN_ID.match(turn_id):
        raise invalid("turnId is malformed")
    digest = commands.canonical_hash("web.cancel", {"turnId": turn_id})
    with transaction.atomic():
        stored = commands.find_receipt(WEB_BINDING_ID, client_command_id, "web.cancel", digest)
        if stored is not None:
            return stored
        if not Turn.objects.filter(turn_id=turn_id).exists():
            raise GroupXError("UNKNOWN_TARGET", f"no turn {turn_id}", details={"unknownTargets": [turn_id]})
        accepted, status = lifecycle.request_cancel(turn_id)
        result = {"turnId": turn_id, "accepted": accepted, "status": status, "transport": "structured"}
        commands.store_receipt(WEB_BINDING_ID, client_command_id, "web.cancel", digest, result)
    return result


@router.post("/turns/{turn_id}/cancel", response={202: dict}, summary="Ask to cancel a Turn")
async def post_cancel(request: HttpRequest, turn_id: str):
    return 202, await db.write(cancel_turn)(turn_id, json_body(request))

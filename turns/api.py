"""``POST /api/turns/{turnId}/cancel`` (PROTOCOL §10.3): express the intent; SSE brings the outcome."""

from __future__ import annotations

from typing import Annotated

from django.http import HttpRequest, HttpResponse
from ninja import Path, Router
from pydantic import WithJsonSchema

from groupx_site.core import db
from groupx_site.core.contract import route
from groupx_site.core.json_response import json_response
from turns.actions import TURN_ID, accept_cancel
from turns.schemas import CancelAccepted, CancelBody

router = Router(tags=["turns"])


# The turnId is checked after the body (the protocol's order), so its pattern is documented, not
# enforced by ninja: a malformed one is INVALID_ENVELOPE, an unknown one UNKNOWN_TARGET.
TurnId = Path[Annotated[str, WithJsonSchema({"type": "string", "pattern": TURN_ID.pattern})]]


@router.post(
    "/turns/{turn_id}/cancel",
    summary="Ask to cancel a Turn",
    description="SSE brings the outcome.",
    **route(
        {202: CancelAccepted},
        write=True,
        body=True,
        errors={404: ("UNKNOWN_TARGET",), 409: ("CLIENT_COMMAND_CONFLICT",)},
    ),
)
async def post_cancel(request: HttpRequest, turn_id: TurnId, body: CancelBody) -> HttpResponse:
    return json_response(await db.write(accept_cancel)(turn_id, body.checked), 202)

"""``POST /api/messages`` (PROTOCOL §10.2): queue Turns; ``POST /api/turns/{turnId}/cancel`` (§10.3):
express the intent; SSE brings the outcome."""

from __future__ import annotations

from typing import Annotated

from django.http import HttpRequest, HttpResponse
from ninja import Path, Router
from pydantic import WithJsonSchema

from groupx_site.core.contract import route
from groupx_site.core.json_response import json_response
from groupx_site.store import db
from turns import messages
from turns.actions import TURN_ID, accept_cancel
from turns.schemas import CancelAccepted, CancelBody, PostMessageAccepted, PostMessageBody

router = Router(tags=["turns"])
# The message post queues Turns, so it lives here; it keeps the room's tag (and its place first
# among the API's paths: groupx_site/api.py mounts it before the room router).
messages_router = Router(tags=["room"])


@messages_router.post(
    "/messages",
    summary="Post a user message and queue one Turn per target",
    # The id it had when it was a room endpoint: the OpenAPI document is unchanged (D151).
    operation_id="rooms_api_post_message",
    **route(
        {202: PostMessageAccepted},
        write=True,
        body=True,
        errors={
            400: ("SUPERVISION_PAIR_INVALID",),
            404: ("UNKNOWN_TARGET",),
            409: ("CLIENT_COMMAND_CONFLICT",),
            413: ("MESSAGE_TOO_LARGE",),
            429: ("QUEUE_CAPACITY_REACHED",),
        },
    ),
)
async def post_message(request: HttpRequest, body: PostMessageBody) -> HttpResponse:
    # It may share one commit with the lanes' calls queued beside it (D68).
    return json_response(await db.write(messages.accept_message, group_commit=True)(body.checked), 202)


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

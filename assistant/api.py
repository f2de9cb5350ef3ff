"""The side chat with the room assistant (FEATURES §13, PROTOCOL §10.7): thin views over
``assistant/side_chat.py``."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from assistant import conversation, side_chat
from assistant.schemas import (
    AssistantState,
    SideCancelAnswer,
    SideCancelBody,
    SideMessageAnswer,
    SideMessageBody,
    SideMessages,
)
from groupx_site.core.contract import route
from groupx_site.core.json_response import json_response
from groupx_site.store import db

router = Router(tags=["assistant"])


@router.get("/assistant", summary="The room assistant: enabled, name and status", **route({200: AssistantState}))
async def get_assistant(request: HttpRequest):
    return json_response(await side_chat.assistant_state())


@router.get(
    "/assistant/messages",
    summary="The side chat with the assistant: the 200 most recent rows",
    **route({200: SideMessages}),
)
async def get_side_messages(request: HttpRequest):
    return json_response(await db.read(conversation.recent_messages)())


@router.post(
    "/assistant/messages",
    summary="Say something to the assistant and get its answer",
    description="The same clientCommandId joins the run in flight or replays the stored reply; a brain "
    "failure is a short reply. Never a room message or a Turn.",
    **route(
        {200: SideMessageAnswer},
        write=True,
        body=True,
        errors={409: ("CLIENT_COMMAND_CONFLICT",), 413: ("MESSAGE_TOO_LARGE",), 503: ("SESSION_NOT_AVAILABLE",)},
    ),
)
async def post_side_message(request: HttpRequest, body: SideMessageBody):
    return json_response(await side_chat.post_message(body.checked))


@router.post(
    "/assistant/cancel",
    summary="Cancel the assistant's answer to one side-chat message",
    **route({200: SideCancelAnswer}, write=True, body=True),
)
async def post_side_cancel(request: HttpRequest, body: SideCancelBody):
    return json_response(await side_chat.cancel(body.checked))

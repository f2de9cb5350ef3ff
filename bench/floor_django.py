"""``python -m bench.floor``'s Django server: GroupX's settings, middleware and ASGI handler, with a
URLconf of its own (``bench.floor_settings``) whose one django-ninja endpoint, ``POST
/api/messages``, validates a body shaped like the real one and answers 201 without running any
GroupX command. Its CPU per request is what Django and ninja cost before GroupX's own work starts.
"""

from __future__ import annotations

import os
from typing import Annotated

os.environ["DJANGO_SETTINGS_MODULE"] = "bench.floor_settings"

from django.http import HttpRequest, HttpResponse  # noqa: E402
from django.urls import path  # noqa: E402
from ninja import NinjaAPI, Schema  # noqa: E402
from pydantic import Field  # noqa: E402

from bench.floor_apps import ANSWER  # noqa: E402  (under daphne: GroupX's request class, as GroupX runs)
from groupx_site.speedups.handler import get_application  # noqa: E402

application = get_application()  # GroupX's ASGI handler (no thread per /api/ request, D20)

from groupx_site.core import process_state  # noqa: E402
from groupx_site.core.contract import NON_BLANK  # noqa: E402
from rooms.validation import AGENT_ACTOR_RE, MAX_CLIENT_COMMAND_ID, MAX_TARGETS  # noqa: E402
from setup_wizard.config import MESSAGE_CHARACTERS  # noqa: E402

process_state.set_readiness("ready")  # GroupX's write guard lets writes through only when ready

api = NinjaAPI(title="GroupX floor", urls_namespace="floor")


class PostMessageBody(Schema):
    """The constraints of rooms.schemas.PostMessageBody, without its GroupX check."""

    clientCommandId: Annotated[str, Field(min_length=1, max_length=MAX_CLIENT_COMMAND_ID, pattern=NON_BLANK)]
    to: Annotated[
        list[Annotated[str, Field(pattern=rf"{AGENT_ACTOR_RE.pattern}|^@all$")]],
        Field(min_length=1, max_length=MAX_TARGETS),
    ]
    content: Annotated[str, Field(min_length=1, max_length=MESSAGE_CHARACTERS, pattern=NON_BLANK)]
    replyToEventId: str | None = None
    forwardedEventId: str | None = None


@api.post("/messages")
async def post_message(request: HttpRequest, body: PostMessageBody):
    return HttpResponse(ANSWER, status=201, content_type="application/json")


urlpatterns = [path("api/", api.urls)]

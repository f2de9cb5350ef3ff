"""``POST /api/messages`` and ``POST /api/turns/{turnId}/cancel`` as schemas (PROTOCOL §10.2, §10.3;
docs/DECISIONS.md D34). The rules stay in ``turns.messages.check_post_message`` and
``turns.actions.check_cancel_body``; each model runs them first."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from groupx_site.core.contract import Checked
from rooms import validation
from rooms.schemas import ClientCommandId, EventReference, MessageContent, Response, Target
from turns import messages
from turns import supervision as pairing
from turns.actions import check_cancel_body


class CancelBody(Checked):
    model_config = ConfigDict(title="CancelBody")
    check = check_cancel_body

    clientCommandId: ClientCommandId


class CancelAccepted(Response):
    """``accepted`` is false when the Turn had already finished; SSE brings the outcome."""

    turnId: str
    accepted: bool
    status: str
    transport: Literal["structured"]


# ---- POST /api/messages ----------------------------------------------------------------------------


class SupervisionIn(BaseModel):
    """Pair observers with this task's workers (FEATURES §12): each observer gets a Watch Turn that
    may ``watch`` the workers and ``steer`` them. Observers are enabled agents, none of them in ``to``
    (INVALID_ENVELOPE: "an agent is either a worker (to) or an observer, not both"); an observer that
    is not an enabled agent is an unknown target, as a worker would be (UNKNOWN_TARGET), and one that
    ``@all`` also made a worker is refused by the store (SUPERVISION_PAIR_INVALID)."""

    model_config = ConfigDict(extra="forbid", title="SupervisionIn")
    observers: Annotated[
        list[Annotated[str, Field(pattern=validation.AGENT_ACTOR_RE.pattern)]],
        Field(min_length=1, max_length=pairing.MAX_OBSERVERS, json_schema_extra={"uniqueItems": True}),
    ]
    mode: Literal["live_steer"]


class PostMessageBody(Checked):
    """A user message to one or more agents. The sender is the channel (``user:web``): ``from``,
    ``actor``, ``provenance``, ``sender`` and ``eventId`` are refused first (SENDER_FIELD_FORBIDDEN)."""

    model_config = ConfigDict(
        title="PostMessageBody",
        json_schema_extra={
            "examples": [{"clientCommandId": "c-1", "to": ["@all"], "content": "Who has a minute for a review?"}]
        },
    )
    check = messages.check_post_message

    clientCommandId: ClientCommandId
    to: Annotated[
        list[Target], Field(min_length=1, max_length=validation.MAX_TARGETS, json_schema_extra={"uniqueItems": True})
    ]
    content: MessageContent
    replyToEventId: EventReference | None = None
    forwardedEventId: EventReference | None = None
    supervision: SupervisionIn | None = None


class QueuedTurnOut(BaseModel):
    target: str
    turnId: str
    status: str
    transport: Literal["structured"]


class PostMessageAccepted(Response):
    """``turns`` holds the workers; a message with ``supervision`` adds the observers' Watch Turns,
    the watch brief's event and the ``supervision.paired`` event."""

    messageEventId: str
    correlationId: str
    turns: list[QueuedTurnOut]
    watchTurns: list[QueuedTurnOut] | None = None
    watchEventId: str | None = None
    pairEventId: str | None = None

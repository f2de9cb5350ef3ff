"""The side chat's REST contract as schemas (FEATURES §13; docs/DECISIONS.md D34). The rules stay
in ``assistant.conversation.check_side_message`` / ``check_side_cancel``; each model runs them first."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from assistant import conversation
from assistant.status import STATUSES
from groupx_site.core.contract import Checked
from rooms.schemas import ClientCommandId, MessageContent, Response

Status = Literal[STATUSES]


class AssistantState(Response):
    enabled: bool
    name: str
    status: Status
    detail: str | None = None


class SideMessageOut(BaseModel):
    model_config = ConfigDict(title="SideMessageOut", extra="allow")
    messageId: str
    role: Literal["user", "assistant"]
    content: str
    createdAt: str
    clientCommandId: str | None = None


class SideMessages(Response):
    """At most 200 rows, the most recent ones, oldest first."""

    messages: list[SideMessageOut]


class SideMessageBody(Checked):
    """A message to the assistant. Only ``clientCommandId`` and ``content``: the sender's fields are
    SENDER_FIELD_FORBIDDEN, ``to`` and ``supervision`` INVALID_ENVELOPE."""

    model_config = ConfigDict(
        title="SideMessageBody",
        json_schema_extra={
            "examples": [{"clientCommandId": "side-1", "content": "Ask every agent for a status and summarise."}]
        },
    )
    check = conversation.check_side_message

    clientCommandId: ClientCommandId
    content: MessageContent


class SideMessageAnswer(Response):
    """The user row, and the reply once there is one (a failure is a short reply too)."""

    userMessage: SideMessageOut
    assistantMessage: SideMessageOut | None = None
    status: Status
    detail: str | None = None


class SideCancelBody(Checked):
    model_config = ConfigDict(title="SideCancelBody")
    check = conversation.check_side_cancel

    clientCommandId: ClientCommandId


class SideCancelAnswer(Response):
    accepted: bool

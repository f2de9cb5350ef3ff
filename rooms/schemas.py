"""The room's REST contract as schemas (PROTOCOL §10.1–§10.2; docs/DECISIONS.md D34): what the
views declare, so ``/api/openapi.json`` documents it and ninja validates it. The rules and their
order stay in ``rooms.history`` (MCP calls them too); each
model runs them first (``groupx_site/core/contract.py``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from groupx_site.core.contract import NON_BLANK, Checked
from rooms import export, history, sse, validation
from setup_wizard.config import MESSAGE_CHARACTERS

ClientCommandId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=validation.MAX_CLIENT_COMMAND_ID,
        pattern=NON_BLANK,
        description="Chosen by the client; a retry with the same id and body returns the stored result.",
    ),
]
EventReference = Annotated[str, Field(min_length=1, max_length=validation.MAX_REFERENCE)]
MessageContent = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MESSAGE_CHARACTERS,
        pattern=NON_BLANK,
        description=f"Non-blank; at most {MESSAGE_CHARACTERS} code points (longer: 413 MESSAGE_TOO_LARGE).",
    ),
]
Target = Annotated[str, Field(pattern=rf"{validation.AGENT_ACTOR_RE.pattern}|^@all$")]
Decimal = Annotated[int, Field(ge=1, le=10**18 - 1)]
# Blank is no bound, as when the parameter is absent.
Moment = Annotated[
    str,
    WithJsonSchema({"type": "string", "anyOf": [{"format": "date"}, {"format": "date-time"}, {"pattern": r"^\s*$"}]}),
]


class Response(BaseModel):
    """A success body: the fields listed are always there; a later version may add more."""

    model_config = ConfigDict(extra="allow")


# ---- the log: envelopes, pages, search --------------------------------------------------------------


class ActorRef(Response):
    actorId: str
    kind: str
    displayName: str
    instanceId: str | None = None


class Envelope(Response):
    """One event as bootstrap, pages and the stream deliver it (PROTOCOL §3.1)."""

    schema_: str = Field(alias="schema")
    eventId: str
    seq: int | None
    roomId: str
    type: str
    actor: ActorRef
    to: list[str]
    correlationId: str
    rootCorrelationId: str
    occurredAt: str
    durability: Literal["durable", "transient"]
    body: dict[str, Any]


class PageCursor(BaseModel):
    beforeSeq: int


class NextPageCursor(BaseModel):
    afterSeq: int


class ReferencedMessage(Response):
    """A message that an event of the page replies to or forwards, when it is not in the page."""

    seq: int
    eventId: str
    actor: ActorRef
    occurredAt: str
    excerpt: str


class EventsPage(Response):
    events: list[Envelope]
    previousPage: PageCursor | None = None
    nextPage: NextPageCursor | None = Field(None, description="Forward pages only: newer events follow.")
    referencedMessages: list[ReferencedMessage] | None = None


def _check_page(params: dict[str, str]) -> tuple[int | None, int, int | None, Any]:
    return history.parse_page(params)


class EventsPageQuery(Checked):
    model_config = ConfigDict(populate_by_name=True)
    check = _check_page
    query_check = True

    beforeSeq: Decimal = Field(None, description="Events with a smaller seq; the newest when absent.")
    afterSeq: Annotated[int, Field(ge=0, le=10**18 - 1)] = Field(
        None,
        description="A forward page: the oldest events with a larger seq (0: the beginning of the room); "
        "beforeSeq, when sent too, bounds it.",
    )
    since: Moment = Field(
        None,
        alias="from",
        description="A forward page from this moment (ISO 8601; UTC when no zone is given): jump to a date.",
    )
    limit: Annotated[int, Field(ge=1, le=history.PAGE_LIMIT_MAX)] = Field(
        None, description=f"Default {history.PAGE_LIMIT_DEFAULT}."
    )


class SearchHit(Response):
    seq: int
    eventId: str
    author: ActorRef
    occurredAt: str
    snippet: str


class SearchPage(Response):
    query: str
    items: list[SearchHit]
    nextPage: PageCursor | None = None


def _check_search(params: dict[str, str]) -> tuple[str, int | None, int]:
    return (
        history.parse_query(params.get("q")),
        history.parse_before_seq(params.get("beforeSeq")),
        history.parse_limit(params.get("limit"), history.SEARCH_LIMIT_DEFAULT),
    )


class SearchQuery(Checked):
    check = _check_search
    query_check = True

    q: Annotated[str, Field(max_length=history.QUERY_MAX_CHARS, pattern=NON_BLANK)] = Field(
        description="Every whitespace-separated word must occur (case-insensitive)."
    )
    beforeSeq: Decimal = None
    limit: Annotated[int, Field(ge=1, le=history.PAGE_LIMIT_MAX)] = Field(
        None, description=f"Default {history.SEARCH_LIMIT_DEFAULT}."
    )


def _check_cursor(params: dict[str, str]) -> int:
    # The view reads the cursor again with the Last-Event-ID header, which must agree with it.
    return sse.parse_cursor(params.get("afterSeq"), None)


class EventsQuery(Checked):
    check = _check_cursor
    query_check = True

    afterSeq: Annotated[int, Field(ge=0, le=10**18 - 1)] = Field(
        None, description="Replay events with a larger seq (or send Last-Event-ID); 0 when both are absent."
    )


def _check_range(params: dict[str, str]) -> export.Range:
    return export.parse_range(params.get("from"), params.get("to"))


class ExportQuery(Checked):
    model_config = ConfigDict(populate_by_name=True)
    check = _check_range
    query_check = True

    start: Moment = Field(None, alias="from", description="ISO 8601; UTC when no zone is given.")
    end: Moment = Field(None, alias="to", description="ISO 8601, exclusive; later than from.")

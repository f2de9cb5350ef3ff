"""The room (or a time range of it) as Markdown: the one renderer behind ``GET /api/export.md``
and ``manage.py export_room`` (D27).

Only ``message.created`` events are written, in seq order, each as its author's display name,
its time (UTC) and its content verbatim (agents already write Markdown). A reply or a forward says
whose message it answers. Messages are read in pages of ``PAGE`` rows by seq, and each page looks
up the authors it refers to in one query, so a 100,000-event room is never loaded at once and
memory stays flat whatever the range.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.utils.dateparse import parse_datetime

from groupx_site.core.errors import invalid
from groupx_site.core.text import repair
from groupx_site.store import db
from rooms import event_types
from rooms.models import ROOM_ID, Event

PAGE = 500
MESSAGE = event_types.MESSAGE_CREATED
QUOTE_CHARS = 100


@dataclass(frozen=True)
class Range:
    """Messages with start <= occurredAt < end; None is an open end."""

    start: datetime | None = None
    end: datetime | None = None


def parse_moment(name: str, raw: str | None) -> datetime | None:
    """An ISO 8601 date or date-time; without a zone it is UTC (the server has no other clock)."""
    if raw is None or not raw.strip():
        return None
    text = raw.strip()
    try:
        moment = parse_datetime(text) or (parse_datetime(text + "T00:00:00") if len(text) == 10 else None)
    except ValueError:
        moment = None
    if moment is None:
        raise invalid(f"{name} must be an ISO 8601 date or date-time, e.g. 2026-12-01T09:30:00Z", **{name: text[:64]})
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def parse_range(start: str | None, end: str | None) -> Range:
    moments = Range(parse_moment("from", start), parse_moment("to", end))
    if moments.start and moments.end and moments.start >= moments.end:
        raise invalid("from must be earlier than to")
    return moments


def _clock(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _message_rows(moments: Range, after_seq: int) -> list[dict[str, Any]]:
    rows = Event.objects.filter(event_type=MESSAGE, seq__gt=after_seq)
    if moments.start:
        rows = rows.filter(occurred_at__gte=moments.start)
    if moments.end:
        rows = rows.filter(occurred_at__lt=moments.end)
    return list(
        rows.order_by("seq").values(
            "seq",
            "event_id",
            "actor_display_name",
            "actor_id",
            "occurred_at",
            "reply_to_event_id",
            "forwarded_event_id",
            "body",
        )[:PAGE]
    )


def _referenced(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The messages this page replies to or forwards, by event id (one query a page)."""
    ids = {row[key] for row in rows for key in ("reply_to_event_id", "forwarded_event_id") if row[key]}
    if not ids:
        return {}
    found = Event.objects.filter(event_id__in=ids).values("event_id", "actor_display_name", "occurred_at", "body")
    return {row["event_id"]: row for row in found}


def _content(body: Any) -> str:
    content = body.get("content") if isinstance(body, dict) else None
    return content if isinstance(content, str) else ""


def _reference_line(kind: str, event_id: str, references: dict[str, dict[str, Any]]) -> str:
    label = "Reply to" if kind == "reply" else "Forwarded from"
    ref = references.get(event_id)
    if ref is None:
        return f"> {label} an earlier message"
    quote = " ".join(_content(ref["body"]).split())
    if len(quote) > QUOTE_CHARS:
        quote = quote[: QUOTE_CHARS - 1] + "…"
    return f"> {label} **{ref['actor_display_name']}** ({_clock(ref['occurred_at'])}): {quote}"


def render_message(row: dict[str, Any], references: dict[str, dict[str, Any]]) -> str:
    lines = [f"### {row['actor_display_name']} · {_clock(row['occurred_at'])}", ""]
    if row["reply_to_event_id"]:
        lines += [_reference_line("reply", row["reply_to_event_id"], references), ""]
    if row["forwarded_event_id"]:
        lines += [_reference_line("forward", row["forwarded_event_id"], references), ""]
    lines += [_content(row["body"]).rstrip() or "*(no text)*", "", ""]
    return "\n".join(lines)


def header(moments: Range, now: datetime) -> str:
    span = "the whole room"
    if moments.start or moments.end:
        span = (
            f"from {_clock(moments.start) if moments.start else 'the beginning'} "
            f"to {_clock(moments.end) if moments.end else 'now'}"
        )
    return f"# GroupX · {ROOM_ID}\n\nMessages of {span}, exported {_clock(now)}.\n\n---\n\n"


def markdown_page(moments: Range, after_seq: int = 0) -> tuple[str, int | None]:
    """One page of the export after ``after_seq``: its Markdown and the seq to continue after,
    or None when the range is done. Separate from the iterator so async callers can run each
    page on a database thread (``groupx_site.store.db.read``)."""
    rows = _message_rows(moments, after_seq)
    if not rows:
        return "", None
    references = _referenced(rows)
    text = "".join(render_message(row, references) for row in rows)
    # Text written by an older version may hold a lone surrogate; a download must still encode.
    return repair(text)[0], rows[-1]["seq"] if len(rows) == PAGE else None


EMPTY = "*No messages in this range.*\n"


def markdown(moments: Range, now: datetime) -> Iterator[str]:
    """The whole export as chunks of text, one page of messages at a time."""
    yield header(moments, now)
    cursor: int | None = 0
    wrote = False
    while cursor is not None:
        text, cursor = markdown_page(moments, cursor)
        wrote = wrote or bool(text)
        yield text
    if not wrote:
        yield EMPTY


async def markdown_streamed(moments: Range, now: datetime) -> AsyncIterator[str]:
    """``markdown`` for an ASGI response: each page is read on a database reader thread (a sync
    iterator would be read whole into memory by Django before the first byte goes out)."""
    read_page = db.read(markdown_page)
    yield header(moments, now)
    cursor: int | None = 0
    wrote = False
    while cursor is not None:
        text, cursor = await read_page(moments, cursor)
        wrote = wrote or bool(text)
        yield text
    if not wrote:
        yield EMPTY


def filename(moments: Range, now: datetime) -> str:
    stamp = (moments.end or now).astimezone(UTC).strftime("%Y%m%d-%H%M")
    return f"groupx-room-main-{stamp}.md"

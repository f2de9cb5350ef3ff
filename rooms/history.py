"""The room's whole history, read back: older pages by seq and message search (D27).

``/api/bootstrap`` carries only the newest 100 events; everything older is read here, from the
same durable log and as the same envelopes, so the page renders an old page exactly as it
rendered those events live. Both reads are bounded: a page is a reverse ``LIMIT`` on the primary
key, and search asks the FTS5 index of message content (``rooms/migrations/0002``) for its newest
matches first, so neither grows with the length of the room.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from groupx_site.core.errors import invalid
from groupx_site.store.text_search import text_filter
from rooms import event_types, export, search_index
from rooms.events import ENVELOPE_FIELDS, envelope_from_row, iso
from rooms.models import Event

PAGE_LIMIT_MAX = 500  # FEATURES §6.5: a page limit above 500 is INVALID_ENVELOPE
PAGE_LIMIT_DEFAULT = 100  # the size of bootstrap's recentEvents, so every page costs the same
SEARCH_LIMIT_DEFAULT = 20
QUERY_MAX_CHARS = 1024  # as memory_search (FEATURES §15)
SNIPPET_RADIUS = 70  # characters of context either side of the first match
REFERENCE_EXCERPT_CHARS = 280  # of a replied-to message outside the page: a quote, not the message
MESSAGE = event_types.MESSAGE_CREATED

DECIMAL = re.compile(r"^[0-9]{1,18}$")


def _positive(name: str, raw: str | None, default: int | None, *, maximum: int | None = None) -> int | None:
    if raw is None or raw == "":
        return default
    if not DECIMAL.match(raw.strip()) or int(raw) < 1:
        raise invalid(f"{name} must be a positive decimal integer", **{name: raw[:32]})
    value = int(raw)
    if maximum is not None and value > maximum:
        raise invalid(f"{name} must be at most {maximum}", **{name: value})
    return value


def parse_limit(raw: str | None, default: int) -> int:
    return _positive("limit", raw, default, maximum=PAGE_LIMIT_MAX)


def parse_before_seq(raw: str | None) -> int | None:
    return _positive("beforeSeq", raw, None)


def parse_after_seq(raw: str | None) -> int | None:
    """``afterSeq`` of a forward page: 0 (the beginning of the room) or a positive seq."""
    if raw is not None and raw.strip() == "0":
        return 0
    return _positive("afterSeq", raw, None)


def parse_page(params: dict[str, str]) -> tuple[int | None, int, int | None, datetime | None]:
    """beforeSeq alone pages backwards; afterSeq or from page forwards (beforeSeq then bounds them)."""
    before_seq = parse_before_seq(params.get("beforeSeq"))
    after_seq = parse_after_seq(params.get("afterSeq"))
    since = export.parse_moment("from", params.get("from"))
    return before_seq, parse_limit(params.get("limit"), PAGE_LIMIT_DEFAULT), after_seq, since


# ---- pages of the log ---------------------------------------------------------------------------


def page(
    before_seq: int | None, limit: int, after_seq: int | None = None, since: datetime | None = None
) -> dict[str, Any]:
    """Up to ``limit`` durable events with seq < ``before_seq`` (the newest ones when it is None),
    in seq order. ``previousPage.beforeSeq`` is the cursor of the next older page; it is absent
    once the page reaches the first event of the room.

    With ``after_seq`` (0 is the beginning of the room) or ``since`` (a moment: "jump to a date")
    the page goes forwards instead: the oldest ``limit`` events after that point, and
    ``nextPage.afterSeq`` continues with newer ones until the newest event (or ``before_seq``) is
    reached."""
    if after_seq is not None or since is not None:
        return _forward_page(after_seq or 0, since, before_seq, limit)
    rows = Event.objects.order_by("-seq")
    if before_seq is not None:
        rows = rows.filter(seq__lt=before_seq)
    # One row more than asked says whether anything older exists, without a second query.
    found = list(rows.values(*ENVELOPE_FIELDS)[: limit + 1])
    older = len(found) > limit
    found = found[:limit]
    found.reverse()
    result: dict[str, Any] = {"events": [envelope_from_row(row) for row in found]}
    if older:
        result["previousPage"] = {"beforeSeq": found[0]["seq"]}
    return with_references(result, found)


def _forward_page(after_seq: int, since: datetime | None, before_seq: int | None, limit: int) -> dict[str, Any]:
    rows = Event.objects.order_by("seq").filter(seq__gt=after_seq)
    if before_seq is not None:
        rows = rows.filter(seq__lt=before_seq)
    if since is not None:
        # seq follows the clock that stamps occurredAt, so the first match is where the date starts.
        rows = rows.filter(occurred_at__gte=since)
    found = list(rows.values(*ENVELOPE_FIELDS)[: limit + 1])
    newer = len(found) > limit
    found = found[:limit]
    result: dict[str, Any] = {"events": [envelope_from_row(row) for row in found]}
    if found and Event.objects.filter(seq__lt=found[0]["seq"]).exists():
        result["previousPage"] = {"beforeSeq": found[0]["seq"]}
    if newer:
        result["nextPage"] = {"afterSeq": found[-1]["seq"]}
    return with_references(result, found)


def with_references(result: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Add ``referencedMessages``: an excerpt of every message the page's events reply to or
    forward that is not itself in the page, so "↩ an earlier message" can say which one."""
    present = {row["event_id"] for row in rows}
    wanted = {
        ref
        for row in rows
        for ref in (row["reply_to_event_id"], row["forwarded_event_id"])
        if ref and ref not in present
    }
    if not wanted:
        return result
    found = (
        Event.objects.filter(event_id__in=wanted, event_type=MESSAGE)
        .order_by("seq")
        .values("seq", "event_id", "actor_id", "actor_kind", "actor_display_name", "occurred_at", "body")
    )
    result["referencedMessages"] = [
        {
            "seq": row["seq"],
            "eventId": row["event_id"],
            "actor": {"actorId": row["actor_id"], "kind": row["actor_kind"], "displayName": row["actor_display_name"]},
            "occurredAt": iso(row["occurred_at"]),
            "excerpt": _excerpt(row["body"]),
        }
        for row in found
    ]
    return result


def _excerpt(body: Any) -> str:
    content = body.get("content") if isinstance(body, dict) else None
    flat = " ".join(content.split()) if isinstance(content, str) else ""
    return flat if len(flat) <= REFERENCE_EXCERPT_CHARS else flat[: REFERENCE_EXCERPT_CHARS - 1] + "…"


# ---- search over messages -------------------------------------------------------------------------


def parse_query(raw: str | None) -> str:
    query = (raw or "").strip()
    if not query:
        raise invalid("q must name at least one word to search for")
    if len(query) > QUERY_MAX_CHARS:
        raise invalid(f"q must be at most {QUERY_MAX_CHARS} characters", length=len(query))
    return query


def matching_messages(query: str) -> QuerySet:
    """Every ``message.created`` whose content holds every whitespace-separated term of ``query``
    (case-insensitive substrings). Terms of three or more characters go through the trigram index,
    each quoted so FTS5 syntax in what the user typed stays inert; shorter ones (and every term
    on a database without the index) use LIKE on the content. The messages of the last second or so,
    which the index takes in its next batch (rooms/search_index.py), match as they will then."""
    return text_filter(
        Event.objects.filter(event_type=MESSAGE),
        search_index.FTS_TABLE,
        query,
        key="seq",
        content="body__content",
        indexed_through_sql=search_index.INDEXED_THROUGH_SQL,
    )


def snippet(content: str, terms: list[str]) -> str:
    """A one-line excerpt of ``content`` around the first term found, with "…" where it was cut."""
    flat = " ".join(content.split())
    lowered = flat.lower()
    hits = [i for i in (lowered.find(t.lower()) for t in terms) if i >= 0]
    at = min(hits) if hits else 0
    start = max(0, at - SNIPPET_RADIUS)
    end = min(len(flat), at + SNIPPET_RADIUS * 2)
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")


def search(query: str, before_seq: int | None, limit: int) -> dict[str, Any]:
    """Messages matching ``query``, newest first; ``nextPage.beforeSeq`` continues with older ones."""
    messages = matching_messages(query)
    if before_seq is not None:
        messages = messages.filter(seq__lt=before_seq)
    rows = list(
        messages.order_by("-seq").values(
            "seq",
            "event_id",
            "actor_id",
            "actor_kind",
            "actor_display_name",
            "occurred_at",
            "body",
        )[: limit + 1]
    )
    terms = query.split()
    items = []
    for row in rows[:limit]:
        content = row["body"].get("content") if isinstance(row["body"], dict) else None
        items.append(
            {
                "seq": row["seq"],
                "eventId": row["event_id"],
                "author": {
                    "actorId": row["actor_id"],
                    "kind": row["actor_kind"],
                    "displayName": row["actor_display_name"],
                },
                "occurredAt": iso(row["occurred_at"]),
                "snippet": snippet(content if isinstance(content, str) else "", terms),
            }
        )
    result: dict[str, Any] = {"query": query, "items": items}
    if len(rows) > limit:
        result["nextPage"] = {"beforeSeq": items[-1]["seq"]}
    return result

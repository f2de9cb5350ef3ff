"""The room's context transcript and its checkpoints (FEATURES §14): which events count as room
context, where the reset floor and the active summary stand, and how an entry is written.

Room context is ``message.created`` and ``operator.dispatch`` only (watch briefs excluded).
Reasoning records, tool records, Turn bookkeeping and memory events never enter it.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Max, Q, QuerySet

from memory.models import ContextReset, Summary
from rooms import event_types
from rooms.models import ROOM_ID, Event

CONTEXT_TYPES = event_types.CONTEXT_TYPES  # the types declared with audience "context"
WATCH_BRIEF_KIND = "supervision.watch"


def context_events() -> QuerySet:
    # has_key first: a plain exclude(body__kind=...) compares NULL for bodies without "kind", and
    # NOT (NULL) would drop every ordinary message.
    return Event.objects.filter(room_id=ROOM_ID, event_type__in=CONTEXT_TYPES).exclude(
        Q(body__has_key="kind") & Q(body__kind=WATCH_BRIEF_KIND)
    )


def high_water() -> int:
    return Event.objects.aggregate(top=Max("seq"))["top"] or 0


def reset_floor() -> int:
    """Events at or below this seq are outside every later packet, usage and compaction."""
    return ContextReset.objects.filter(room_id=ROOM_ID).aggregate(top=Max("through_seq"))["top"] or 0


def active_summary(floor: int | None = None) -> Summary | None:
    """The room's single active checkpoint, if it still lies above the reset floor (``floor``: a
    value the caller just read with ``reset_floor()``, to save the second read)."""
    # At most one active summary per room (a unique constraint): no ordering needed.
    summary = next(iter(Summary.objects.filter(room_id=ROOM_ID, status="active")), None)
    if summary is None or summary.through_seq <= (reset_floor() if floor is None else floor):
        return None
    return summary


def uncompacted_after() -> tuple[int, Summary | None, int]:
    """(lower bound of the verbatim transcript, the active summary, the reset floor)."""
    floor = reset_floor()
    summary = active_summary(floor)
    return max(floor, summary.through_seq if summary else 0), summary, floor


def entry(event: dict[str, Any]) -> str:
    """One transcript line: id, seq, author, author name, references, then the text."""
    header = (
        f"- id={event['event_id']} seq={event['seq']} author={event['actor_id']} name={event['actor_display_name']!r}"
    )
    if event["event_type"] != event_types.MESSAGE_CREATED:
        header += f" type={event['event_type']}"
    if event["reply_to_event_id"]:
        header += f" reply_to={event['reply_to_event_id']}"
    if event["forwarded_event_id"]:
        header += f" forwarded={event['forwarded_event_id']}"
    return f"{header}\n{content_of(event)}"


def content_of(event: dict[str, Any]) -> str:
    return str((event["body"] or {}).get("content", ""))


def summary_block(summary: Summary) -> str:
    return (
        f"summary_id={summary.summary_id} covers_seq={summary.from_seq}..{summary.through_seq} "
        f"generator={summary.generator_actor_id}\n{summary.content}"
    )

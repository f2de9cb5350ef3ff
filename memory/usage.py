"""``GET /api/context``: the room's context usage in characters (PROTOCOL §10.5, FEATURES §14).

estimate = 160 + (summary length + 192, when a usable summary exists) + for every room context
message after max(summary, reset floor): content + actorId + displayName + occurredAt lengths + 96.
It is not a token count of any model; identities, memory and native instructions are not in it.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import Count, IntegerField, Sum, Value
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce, Length
from django.utils import timezone

from memory.context import soft_target
from memory.transcript import context_events, high_water, uncompacted_after
from rooms.events import iso
from rooms.models import ROOM_ID

BASE_CHARACTERS, SUMMARY_OVERHEAD, MESSAGE_OVERHEAD = 160, 192, 96
KEEP_LAST = 12  # manual compaction keeps this many messages verbatim, so more are "compactable"


def usage() -> dict[str, Any]:
    max_chars = settings.GROUPX_CONFIG.limits.contextCharacters
    lower, summary, floor = uncompacted_after()
    # Every stored occurredAt has the same ISO shape (milliseconds, +00:00), so its length is fixed.
    occurred_len = len(iso(timezone.now()))
    totals = (
        context_events()
        .filter(seq__gt=lower)
        .aggregate(
            count=Count("seq"),
            chars=Coalesce(
                Sum(
                    Coalesce(Length(KT("body__content")), Value(0)) + Length("actor_id") + Length("actor_display_name"),
                    output_field=IntegerField(),
                ),
                Value(0),
            ),
        )
    )
    estimate = BASE_CHARACTERS + totals["chars"] + totals["count"] * (occurred_len + MESSAGE_OVERHEAD)
    if summary is not None:
        estimate += len(summary.content) + SUMMARY_OVERHEAD
    result: dict[str, Any] = {
        "roomId": ROOM_ID,
        "throughSeq": high_water(),
        "estimatedCharacters": estimate,
        "maxCharacters": max_chars,
        "compactionTriggerCharacters": soft_target(max_chars),
        "utilizationPercent": max(0, min(100, round(100 * estimate / max_chars))),
        "uncompactedMessageCount": totals["count"],
        "compactable": totals["count"] > KEEP_LAST,
    }
    if summary is not None:
        result["summaryThroughSeq"] = summary.through_seq
    if floor:
        result["resetThroughSeq"] = floor
    return result

"""Dated-memory source registration, the small part that runs inside a Turn's terminal
transaction (PROTOCOL §2.2, FEATURES §15.3).

Only completed Turns register; the row holds ids, seqs, a character count and the local date,
never copied text, and no MemoryRecord or event is written here. The rollup itself runs later,
in the background (``memory.dated``).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from django.utils import timezone

from memory import sql as memory_sql
from memory.models import DatedMemoryRollup
from rooms.models import ROOM_ID, Event

# Observer (supervision watch) Turns are not the agent's own work and are excluded.
OBSERVER_COMMAND_TYPES = frozenset({"supervision.watch"})


def local_date(moment: datetime) -> date:
    """The date on the machine's own clock: a user's "day" is local, not UTC."""
    return moment.astimezone().date()


def register_source(
    *,
    turn_id: str,
    actor_id: str,
    command_type: str,
    source_event_id: str,
    source_seq: int | None,
    source_body: dict[str, Any] | None,
    response: Event,
) -> None:
    """Call inside the terminal transaction, after the response message was appended. The source
    message's ``source_seq`` and ``source_body`` come from the caller's read of the Turn (None
    when the source row is gone: nothing is registered)."""
    if command_type in OBSERVER_COMMAND_TYPES or source_seq is None:
        return
    chars = len(str((source_body or {}).get("content", ""))) + len(str(response.body.get("content", "")))
    now = timezone.now()
    day = local_date(now)
    # The row DatedMemorySource.objects.create would write, as a fixed INSERT (memory/sql.py).
    memory_sql.insert_dated_source(
        turn_id=turn_id,
        room_id=ROOM_ID,
        actor_id=actor_id,
        local_date=day,
        source_event_id=source_event_id,
        source_seq=source_seq,
        response_event_id=response.event_id,
        response_seq=response.seq,
        source_chars=chars,
        terminal_at=now,
    )
    # UPDATE first: the day's row usually exists, and then this is one statement instead of
    # SELECT + UPDATE. The caller holds the write lock, so a row missing here stays missing until
    # it is created below, with what the same UPDATE would have made of the model's defaults.
    # (One fixed statement in memory/sql.py: the ORM's F/Greatest/Coalesce cost ~20× SQLite's.)
    if not memory_sql.bump_dated_rollup(
        room_id=ROOM_ID, actor_id=actor_id, day=day, chars=chars, through_seq=response.seq, now=now
    ):
        DatedMemoryRollup.objects.create(
            room_id=ROOM_ID,
            actor_id=actor_id,
            local_date=day,
            pending_turns=1,
            pending_chars=chars,
            pending_through_seq=max(0, response.seq),
            first_pending_at=now,
            last_pending_at=now,
        )

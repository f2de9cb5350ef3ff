"""The few statements of a Turn's hot path that are written as SQL instead of through the ORM.

Why: a Turn runs ~40 statements in one GIL-bound server process, and for these Django spends
~90–250 µs building SQL and model instances against ~10 µs in SQLite (``python -m
bench.turn_cost``, docs/PERFORMANCE.md "Fixes made (turn cost)"). Only fixed statements that run
on every Turn belong here; everything else stays ORM. All values are parameters, values are
adapted exactly as the models' fields would store them, and the statements go through Django's
cursor, so transactions, error wrapping and query capture behave as for ORM queries.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from django.db import connection

from turns.states import DISPATCHING, QUEUED, RUNNING

_INSERT_EVENT = """
    INSERT INTO rooms_event (event_id, room_id, event_type, actor_id, actor_kind, actor_display_name,
        instance_id, targets, reply_to_event_id, forwarded_event_id, causation_id, correlation_id,
        root_correlation_id, idempotency_key, occurred_at, body, provenance)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
    RETURNING seq"""

# queued → dispatching (the claim's CAS) and the columns the Claim needs, in one statement.
_CLAIM_TURN = """
    UPDATE turns_turn SET status = %s, binding_id = %s
    WHERE turn_id = %s AND status = %s
    RETURNING target_actor_id, source_event_id, correlation_id, root_correlation_id"""

# A lane's FIFO head: the columns a lane uses; the rest load on access (``Turn.from_db``).
LANE_HEAD_COLUMNS = ("turn_id", "source_event_id", "target_actor_id", "status", "enqueue_seq")
_LANE_HEAD = f"""
    SELECT {", ".join(LANE_HEAD_COLUMNS)} FROM turns_turn
    WHERE target_actor_id = %s AND status = %s ORDER BY enqueue_seq LIMIT 1"""

_TURN_STATUS = "SELECT status FROM turns_turn WHERE turn_id = %s"

# The first native event: the native id always, dispatching → running only from dispatching (a
# Turn already cancelling stays cancelling). SQLite evaluates every SET against the old row.
_START_TURN = """
    UPDATE turns_turn SET native_turn_id = %s,
        started_at = CASE WHEN status = %s THEN %s ELSE started_at END,
        status = CASE WHEN status = %s THEN %s ELSE status END
    WHERE turn_id = %s"""

# Everything the terminal transaction reads: the Turn, its attempt (if any) and the source message.
_TERMINAL_READ = """
    SELECT t.status, t.target_actor_id, t.source_event_id, t.correlation_id, t.root_correlation_id,
        t.command_type, a.attempt_id, a.delivery_certainty, a.context_through_seq, e.seq, e.body
    FROM turns_turn t
    LEFT JOIN turns_turnattempt a ON a.attempt_id = %s
    LEFT JOIN rooms_event e ON e.event_id = t.source_event_id
    WHERE t.turn_id = %s"""

# A completed Turn joins its agent's pending dated-memory batch for the day (memory/dated_sources.py).
_BUMP_DATED_ROLLUP = """
    UPDATE memory_datedmemoryrollup SET pending_turns = pending_turns + 1, pending_chars = pending_chars + %s,
        pending_through_seq = MAX(pending_through_seq, %s), first_pending_at = COALESCE(first_pending_at, %s),
        last_pending_at = %s
    WHERE room_id = %s AND actor_id = %s AND local_date = %s"""

# The Context Packet's memory and identity reads, each the union of its table's optional groups
# (memory/context.py:_fetch_groups), newest first. The Python predicates there split the rows.
_PACKET_MEMORY = """
    SELECT * FROM memory_memoryrecord
    WHERE status = 'active' AND (
        (scope_type = 'agent' AND scope_id = %s AND agent_memory_type IN ('core', 'dated'))
        OR (scope_type = 'room' AND scope_id = %s)
        OR (scope_type = 'correlation' AND scope_id IN (%s, %s)))
    ORDER BY id DESC LIMIT %s"""
_PACKET_IDENTITY = """
    SELECT * FROM memory_identityrecord WHERE status = 'active' AND subject_actor_id = %s
    ORDER BY id DESC LIMIT %s"""


@dataclass(frozen=True, slots=True)
class TerminalRead:
    """The Turn's status and routing columns, its attempt's (None when it has none) and the
    source message's seq and body (None when the source row is gone)."""

    status: str
    target_actor_id: str
    source_event_id: str
    correlation_id: str
    root_correlation_id: str
    command_type: str
    attempt_id: str | None
    delivery_certainty: str | None
    context_through_seq: int | None
    source_seq: int | None
    source_body: dict[str, Any] | None


def _json(value: Any) -> str | None:
    return None if value is None else connection.ops.adapt_json_value(value, None)


def _datetime(value: datetime | None) -> str | None:
    return connection.ops.adapt_datetimefield_value(value)


def insert_event(*, event_id: str, room_id: str, event_type: str, actor_id: str, actor_kind: str,
                 actor_display_name: str, instance_id: str | None, targets: list[str],
                 reply_to_event_id: str | None, forwarded_event_id: str | None, causation_id: str | None,
                 correlation_id: str, root_correlation_id: str, idempotency_key: str | None,
                 occurred_at: datetime, body: dict[str, Any], provenance: dict[str, Any] | None) -> int:
    """Append one row to the room log; returns its seq."""
    with connection.cursor() as cursor:
        cursor.execute(_INSERT_EVENT, [
            event_id, room_id, event_type, actor_id, actor_kind, actor_display_name, instance_id, _json(targets),
            reply_to_event_id, forwarded_event_id, causation_id, correlation_id, root_correlation_id,
            idempotency_key, _datetime(occurred_at), _json(body), _json(provenance),
        ])
        return cursor.fetchone()[0]


def lane_head(actor_id: str) -> tuple[str, str, str, str, int] | None:
    """The oldest queued Turn of a lane, as ``LANE_HEAD_COLUMNS``, or None."""
    with connection.cursor() as cursor:
        cursor.execute(_LANE_HEAD, [actor_id, QUEUED])
        return cursor.fetchone()


def claim_turn(turn_id: str, binding_id: str) -> tuple[str, str, str, str] | None:
    """CAS queued → dispatching. (target_actor_id, source_event_id, correlation_id,
    root_correlation_id) of the Turn it moved, or None when the Turn was not queued."""
    with connection.cursor() as cursor:
        cursor.execute(_CLAIM_TURN, [DISPATCHING, binding_id, turn_id, QUEUED])
        return cursor.fetchone()


def turn_status(turn_id: str) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute(_TURN_STATUS, [turn_id])
        row = cursor.fetchone()
    return row[0] if row else None


def start_turn(turn_id: str, native_turn_id: str | None, started_at: datetime) -> None:
    with connection.cursor() as cursor:
        cursor.execute(_START_TURN, [native_turn_id, DISPATCHING, _datetime(started_at), DISPATCHING, RUNNING, turn_id])


def terminal_read(turn_id: str, attempt_id: str | None) -> TerminalRead | None:
    """What ``finish`` reads, in one statement; None when the Turn does not exist."""
    with connection.cursor() as cursor:
        cursor.execute(_TERMINAL_READ, [attempt_id, turn_id])
        row = cursor.fetchone()
    if row is None:
        return None
    *columns, body = row
    # As the JSONField reads it; a NULL column (or no source row) stays None.
    return TerminalRead(*columns, source_body=None if body is None else json.loads(body))


def bump_dated_rollup(*, room_id: str, actor_id: str, day: date, chars: int, through_seq: int,
                      now: datetime) -> bool:
    """Add one Turn to the day's rollup row; False when that row does not exist yet."""
    with connection.cursor() as cursor:
        cursor.execute(_BUMP_DATED_ROLLUP, [chars, through_seq, _datetime(now), _datetime(now), room_id, actor_id,
                                            connection.ops.adapt_datefield_value(day)])
        return cursor.rowcount == 1


def packet_memory(*, actor_id: str, room_id: str, correlations: set[str], limit: int) -> list:
    """Active memory records of the agent (core, dated), the room and the correlations, as models."""
    from memory.models import MemoryRecord

    first, *rest = sorted(correlations)
    return list(MemoryRecord.objects.raw(_PACKET_MEMORY, [actor_id, room_id, first, rest[0] if rest else first,
                                                           limit]))


def packet_identity(*, actor_id: str, limit: int) -> list:
    """Active identity records about the agent, as models."""
    from memory.models import IdentityRecord

    return list(IdentityRecord.objects.raw(_PACKET_IDENTITY, [actor_id, limit]))

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

from django.db import DEFAULT_DB_ALIAS, connection

from turns.states import ACTIVE_STATUSES, CLAIM, IN_FLIGHT_STATUSES, QUEUED, START

_INSERT_EVENT = """
    INSERT INTO rooms_event (event_id, room_id, event_type, actor_id, actor_kind, actor_display_name,
        instance_id, targets, reply_to_event_id, forwarded_event_id, causation_id, correlation_id,
        root_correlation_id, idempotency_key, occurred_at, body, provenance)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
    RETURNING seq"""

# queued → dispatching (the claim's CAS, turns.states.CLAIM) and the columns the Claim needs, in one
# statement.
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

# The first native event: the native id always, dispatching → running (turns.states.START) only from
# dispatching (a Turn already cancelling stays cancelling). SQLite evaluates every SET against the old row.
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

# ---- accepting a command (rooms/commands.py, turns/actions.py) ----

# A command's idempotency receipt (unique per binding and clientCommandId).
_FIND_RECEIPT = """
    SELECT command_type, canonical_hash, result FROM rooms_clientcommand
    WHERE source_binding_id = %s AND client_command_id = %s"""
_INSERT_RECEIPT = """
    INSERT INTO rooms_clientcommand (command_id, source_binding_id, client_command_id, command_type,
        canonical_hash, result, accepted_at)
    VALUES (%s, %s, %s, %s, %s, %s, %s)"""

# Unfinished Turns per target, for every target of a command at once (a JSON list of actor ids:
# one fixed statement whatever the number of targets; the turns_lane index serves it).
_ACTIVE = sorted(ACTIVE_STATUSES)
_IN_FLIGHT = sorted(IN_FLIGHT_STATUSES)
_ACTIVE_COUNTS = f"""
    SELECT target_actor_id, COUNT(*) FROM turns_turn
    WHERE target_actor_id IN (SELECT value FROM json_each(%s)) AND status IN ({", ".join(["%s"] * len(_ACTIVE))})
    GROUP BY target_actor_id"""
# The target's in-flight Turn ahead of a newly queued one (what queue_metadata reports).
_IN_FLIGHT_AHEAD = f"""
    SELECT turn_id FROM turns_turn
    WHERE target_actor_id = %s AND status IN ({", ".join(["%s"] * len(_IN_FLIGHT))}) AND enqueue_seq < %s
    ORDER BY enqueue_seq LIMIT 1"""

# A new queued Turn, with every NOT NULL column the model would fill (the nullable ones stay NULL).
_INSERT_TURN = """
    INSERT INTO turns_turn (turn_id, source_event_id, target_actor_id, adapter_id, transport, command_type,
        parent_turn_id, correlation_id, root_correlation_id, hop_count, queued_event_id, enqueue_seq, status,
        partial_text, queued_at)
    VALUES (%s, %s, %s, %s, 'structured', %s, %s, %s, %s, %s, %s, %s, %s, '', %s)"""

# The Context Packet's prelude (memory/context.py:build_context_packet) in one statement: the source
# message, the agent's delivery cursor, the reset floor and the room's active summary (at most one:
# a unique constraint). Was five ORM reads of ~150–200 µs each. No row: the source does not exist.
PACKET_ENTRY_COLUMNS = ("seq", "event_id", "event_type", "actor_id", "actor_display_name", "reply_to_event_id",
                        "forwarded_event_id", "body")  # what memory/transcript.py:entry reads
_SUMMARY_COLUMNS = ("summary_id", "from_seq", "through_seq", "content", "generator_actor_id")
_PACKET_PRELUDE = f"""
    SELECT {", ".join("e." + c for c in PACKET_ENTRY_COLUMNS)}, e.correlation_id, e.root_correlation_id,
        (SELECT last_delivered_seq FROM agents_deliverycursor WHERE actor_id = %s AND room_id = %s),
        (SELECT MAX(through_seq) FROM memory_contextreset WHERE room_id = %s),
        {", ".join("s." + c for c in _SUMMARY_COLUMNS)}
    FROM rooms_event e
    LEFT JOIN memory_summary s ON s.room_id = %s AND s.status = 'active'
    WHERE e.event_id = %s"""

# Room context (memory/transcript.py:context_events) strictly between two seqs, minus the events
# of a JSON list of ids (the reply chain: a fixed statement whatever its length). ``IS NOT`` keeps
# bodies without a "kind" (or with a null one), as the ORM's has_key guard does.
_CONTEXT_RANGE = """
    FROM rooms_event
    WHERE room_id = %s AND event_type IN (%s, %s) AND json_extract(body, '$.kind') IS NOT %s
        AND seq > %s AND seq < %s AND event_id NOT IN (SELECT value FROM json_each(%s))"""
_PACKET_UNREAD = f"SELECT {', '.join(PACKET_ENTRY_COLUMNS)} {_CONTEXT_RANGE} ORDER BY seq DESC"
_PACKET_UNREAD_COUNT = f"SELECT COUNT(*) {_CONTEXT_RANGE}"

# One step up a reply chain: the parent, if it is room context above the reset floor.
_PACKET_PARENT = f"""
    SELECT {", ".join(PACKET_ENTRY_COLUMNS)} FROM rooms_event
    WHERE event_id = %s AND event_type IN (%s, %s) AND seq > %s"""


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
        cursor.execute(_CLAIM_TURN, [CLAIM.new, binding_id, turn_id, CLAIM.current])
        return cursor.fetchone()


def turn_status(turn_id: str) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute(_TURN_STATUS, [turn_id])
        row = cursor.fetchone()
    return row[0] if row else None


def start_turn(turn_id: str, native_turn_id: str | None, started_at: datetime) -> None:
    with connection.cursor() as cursor:
        cursor.execute(_START_TURN, [native_turn_id, START.current, _datetime(started_at), START.current, START.new,
                                     turn_id])


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


def _records(model, sql: str, params: list) -> list:
    """The rows of a ``SELECT *`` as model instances, converted as ``Model.objects.raw`` would (on
    SQLite only the datetime columns need it). A plain cursor: raw() costs ~35 µs even for no rows,
    and most packets find none."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
        names = [column[0] for column in cursor.description]
    if not rows:
        return []
    fields = [model._meta.get_field(name) for name in names]
    dates = [i for i, field in enumerate(fields) if field.get_internal_type() == "DateTimeField"]
    attnames = [field.attname for field in fields]
    records = []
    for row in rows:
        row = list(row)
        for i in dates:
            row[i] = connection.ops.convert_datetimefield_value(row[i], None, connection)
        records.append(model.from_db(DEFAULT_DB_ALIAS, attnames, row))
    return records


def packet_memory(*, actor_id: str, room_id: str, correlations: set[str], limit: int) -> list:
    """Active memory records of the agent (core, dated), the room and the correlations, as models."""
    from memory.models import MemoryRecord

    first, *rest = sorted(correlations)
    return _records(MemoryRecord, _PACKET_MEMORY, [actor_id, room_id, first, rest[0] if rest else first, limit])


def packet_identity(*, actor_id: str, limit: int) -> list:
    """Active identity records about the agent, as models."""
    from memory.models import IdentityRecord

    return _records(IdentityRecord, _PACKET_IDENTITY, [actor_id, limit])


def find_receipt(binding_id: str, client_command_id: str) -> tuple[str, str, Any] | None:
    """(command_type, canonical_hash, result) of the receipt, or None."""
    with connection.cursor() as cursor:
        cursor.execute(_FIND_RECEIPT, [binding_id, client_command_id])
        row = cursor.fetchone()
    return None if row is None else (row[0], row[1], json.loads(row[2]))


def insert_receipt(*, command_id: str, binding_id: str, client_command_id: str, command_type: str, digest: str,
                   result: Any, accepted_at: datetime) -> None:
    with connection.cursor() as cursor:
        cursor.execute(_INSERT_RECEIPT, [command_id, binding_id, client_command_id, command_type, digest,
                                         _json(result), _datetime(accepted_at)])


def active_turn_counts(actor_ids: list[str]) -> dict[str, int]:
    """{actor_id: unfinished Turns} for the actors that have any."""
    with connection.cursor() as cursor:
        cursor.execute(_ACTIVE_COUNTS, [json.dumps(actor_ids), *_ACTIVE])
        return dict(cursor.fetchall())


def in_flight_ahead(actor_id: str, enqueue_seq: int) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute(_IN_FLIGHT_AHEAD, [actor_id, *_IN_FLIGHT, enqueue_seq])
        row = cursor.fetchone()
    return row[0] if row else None


def insert_turn(*, turn_id: str, source_event_id: str, target_actor_id: str, adapter_id: str, command_type: str,
                parent_turn_id: str | None, correlation_id: str, root_correlation_id: str, hop_count: int,
                queued_event_id: str, enqueue_seq: int, status: str, queued_at: datetime) -> None:
    with connection.cursor() as cursor:
        cursor.execute(_INSERT_TURN, [turn_id, source_event_id, target_actor_id, adapter_id, command_type,
                                      parent_turn_id, correlation_id, root_correlation_id, hop_count,
                                      queued_event_id, enqueue_seq, status, _datetime(queued_at)])


# ---- the Context Packet (memory/context.py) ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PacketPrelude:
    source: dict[str, Any]  # PACKET_ENTRY_COLUMNS, correlation_id, root_correlation_id
    cursor: int  # the agent's last delivered seq, 0 without a cursor
    floor: int  # the reset floor, 0 without a reset
    summary: Any  # the room's active Summary (only its packet columns loaded) or None


def _entry(row: tuple) -> dict[str, Any]:
    event = dict(zip(PACKET_ENTRY_COLUMNS, row, strict=True))
    event["body"] = json.loads(event["body"])  # as the JSONField reads it (the column is NOT NULL)
    return event


def packet_prelude(*, actor_id: str, room_id: str, source_event_id: str) -> PacketPrelude | None:
    """What a packet reads before anything optional; None when the source event does not exist."""
    from memory.models import Summary

    with connection.cursor() as cursor:
        cursor.execute(_PACKET_PRELUDE, [actor_id, room_id, room_id, room_id, source_event_id])
        row = cursor.fetchone()
    if row is None:
        return None
    width = len(PACKET_ENTRY_COLUMNS)
    source = _entry(row[:width])
    source["correlation_id"], source["root_correlation_id"], delivered, floor = row[width:width + 4]
    summary_row = row[width + 4:]
    summary = None if summary_row[0] is None else Summary.from_db(DEFAULT_DB_ALIAS, _SUMMARY_COLUMNS, summary_row)
    return PacketPrelude(source, delivered or 0, floor or 0, summary)


def _context_range(room_id: str, after_seq: int, before_seq: int, excluded: list[str]) -> list:
    from memory.transcript import CONTEXT_TYPES, WATCH_BRIEF_KIND

    return [room_id, *CONTEXT_TYPES, WATCH_BRIEF_KIND, after_seq, before_seq, json.dumps(excluded)]


def packet_unread(*, room_id: str, after_seq: int, before_seq: int, excluded: list[str]):
    """Room context with after_seq < seq < before_seq, newest first, as entry dicts; read in chunks
    of 200 rows, so a caller that stops early does not pay for the rest."""
    with connection.cursor() as cursor:
        cursor.execute(_PACKET_UNREAD, _context_range(room_id, after_seq, before_seq, excluded))
        while rows := cursor.fetchmany(200):
            yield from map(_entry, rows)


def packet_unread_count(*, room_id: str, after_seq: int, before_seq: int, excluded: list[str]) -> int:
    with connection.cursor() as cursor:
        cursor.execute(_PACKET_UNREAD_COUNT, _context_range(room_id, after_seq, before_seq, excluded))
        return cursor.fetchone()[0]


def packet_parent(event_id: str, floor: int) -> dict[str, Any] | None:
    """The event ``event_id`` as an entry dict if it is room context above ``floor``, else None."""
    from memory.transcript import CONTEXT_TYPES

    with connection.cursor() as cursor:
        cursor.execute(_PACKET_PARENT, [event_id, *CONTEXT_TYPES, floor])
        row = cursor.fetchone()
    return None if row is None else _entry(row)

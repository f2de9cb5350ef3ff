"""The raw SQL of the memory app: the Context Packet's reads (memory/context.py), the dated
rollup's bump and its source's insert (memory/dated_sources.py) and the native-reset mark a lane reads before each Turn
(memory/native_reset.py).

The rules are rooms/sql.py's (docs/DECISIONS.md D20, D32): names from the models' ``_meta``,
IN-lists sized from their constant tuples, every value a parameter adapted as the field stores it,
and a parity test per statement (tests/unit/test_sql_parity.py). The packet reads the room log
(rooms_event) and the agent's delivery cursor (agents_deliverycursor) besides memory's own tables:
a packet is memory's read, whatever tables it spans.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, NamedTuple

from django.db import DEFAULT_DB_ALIAS, connection

from groupx_site.store.sql import (
    Names,
    adapt_datetime,
    all_rows,
    execute,
    on_this_engine,
    one_row,
    per_engine,
    placeholders,
)
from memory.models import (
    AGENT_MEMORY_TYPES,
    ContextReset,
    DatedMemoryRollup,
    DatedMemorySource,
    IdentityRecord,
    MemoryRecord,
    Summary,
)
from memory.transcript import CONTEXT_TYPES, WATCH_BRIEF_KIND
from rooms.actor_models import Actor, DeliveryCursor
from rooms.models import Event

# ---- the dated rollup (memory/dated_sources.py) ----------------------------------------------------

D = Names(DatedMemoryRollup)
# A completed Turn joins its agent's pending dated-memory batch for the day. (The ORM's
# F/Greatest/Coalesce form costs ~20× SQLite's.)
_BUMP_DATED_ROLLUP = per_engine(
    lambda d: (
        f"""
    UPDATE {D} SET {D.pending_turns} = {D.pending_turns} + 1, {D.pending_chars} = {D.pending_chars} + %s,
        {D.pending_through_seq} = {d.greatest(D.pending_through_seq, "%s")},
        {D.first_pending_at} = COALESCE({D.first_pending_at}, %s), {D.last_pending_at} = %s
    WHERE {D.room_id} = %s AND {D.actor_id} = %s AND {D.local_date} = %s"""
    )
)

# A completed Turn's dated-memory source (the row DatedMemorySource.objects.create writes: the ORM's
# create cost ~5× SQLite's, and it ran on every completed Turn, the last ORM write of a Turn's path).
# ``processed_at`` and ``memory_id`` stay NULL, as the model leaves them.
S = Names(DatedMemorySource)
DATED_SOURCE_INSERT_FIELDS = (
    "turn_id",
    "room_id",
    "actor_id",
    "local_date",
    "source_event_id",
    "source_seq",
    "response_event_id",
    "response_seq",
    "source_chars",
    "terminal_at",
)
_INSERT_DATED_SOURCE = (
    f"INSERT INTO {S} ({S.list(DATED_SOURCE_INSERT_FIELDS)}) VALUES ({placeholders(DATED_SOURCE_INSERT_FIELDS)})"
)

# ---- the Context Packet (memory/context.py) --------------------------------------------------------

# The memory and identity records a packet may show, as plain rows (``MemoryRow``, ``IdentityRow``:
# the columns the packet renders and groups by; a model instance cost ~10 µs each, and a packet may
# look at 3,000 of them).
M, ID = Names(MemoryRecord), Names(IdentityRecord)


class MemoryRow(NamedTuple):
    id: int
    memory_id: str
    scope_type: str
    scope_id: str
    agent_memory_type: str | None
    kind: str
    author_actor_id: str
    subject_actor_id: str | None
    source_kind: str
    created_at: datetime
    content: str


class IdentityRow(NamedTuple):
    id: int
    identity_id: str
    subject_actor_id: str
    author_actor_id: str
    kind: str
    source_kind: str
    content: str


_MEMORY_COLUMNS, _IDENTITY_COLUMNS = M.list(MemoryRow._fields), ID.list(IdentityRow._fields)

# Each table's optional groups at once (memory/packet_groups.py:fetch_groups), newest first: the usual
# packet finds a handful of records, and one read serves every group. The Python predicates there
# split the rows. The correlations are the source's correlation and its root: at most two, bound as two.


def _packet_memory_scopes(correlations: str) -> tuple[str, str, str]:
    """The scopes of a packet's memory groups: the agent's own (core, dated), the room's and the
    correlations'; ``correlations``: the two values the last may take (placeholders, or the source
    row's columns in the prelude). Parameters: the agent, its memory types, then the room."""
    return (
        f"{M.scope_type} = 'agent' AND {M.scope_id} = %s AND {M.agent_memory_type} IN ({placeholders(AGENT_MEMORY_TYPES)})",
        f"{M.scope_type} = 'room' AND {M.scope_id} = %s",
        f"{M.scope_type} = 'correlation' AND {M.scope_id} IN ({correlations})",
    )


_PACKET_MEMORY = f"""
    SELECT {_MEMORY_COLUMNS} FROM {M}
    WHERE {M.status} = 'active' AND ({" OR ".join(f"({scope})" for scope in _packet_memory_scopes("%s, %s"))})
    ORDER BY {M.id} DESC LIMIT %s"""
_PACKET_IDENTITY_WHERE = f"{ID.status} = 'active' AND {ID.subject_actor_id} = %s"
_PACKET_IDENTITY = f"SELECT {_IDENTITY_COLUMNS} FROM {ID} WHERE {_PACKET_IDENTITY_WHERE} ORDER BY {ID.id} DESC LIMIT %s"

# When a table holds more than that read's cap, each group is read on its own, a page at a time
# newest first (keyset on id, from an index: the scope index's entries are in id order within a
# scope), only as far as the packet takes it, and counted for what it leaves out (D62). Public
# memory is the room's stream merged with each correlation's. "user-authored" is what the packet's
# predicate says: an author starting with ``user:``, ASCII case-insensitive, as SQLite's LIKE; the
# same spelling on PostgreSQL, whose LIKE is case-sensitive.
_USER_AUTHOR = f"LOWER(SUBSTR({ID.author_actor_id}, 1, 5)) = 'user:'"
_GROUPS = {
    "agent_memory": (
        M,
        _MEMORY_COLUMNS,
        f"{M.scope_type} = 'agent' AND {M.scope_id} = %s AND {M.agent_memory_type} = %s",
    ),
    "scope_memory": (M, _MEMORY_COLUMNS, f"{M.scope_type} = %s AND {M.scope_id} = %s"),
    "self_identity": (ID, _IDENTITY_COLUMNS, f"{ID.subject_actor_id} = %s AND {ID.author_actor_id} = %s"),
    "user_identity": (ID, _IDENTITY_COLUMNS, f"{ID.subject_actor_id} = %s AND {_USER_AUTHOR}"),
    "observed_identity": (
        ID,
        _IDENTITY_COLUMNS,
        f"{ID.subject_actor_id} = %s AND {ID.author_actor_id} <> %s AND NOT {_USER_AUTHOR}",
    ),
}
_GROUP_PAGE = {
    name: f"SELECT {columns} FROM {t} WHERE {t.status} = 'active' AND {where} AND {t.id} < %s "
    f"ORDER BY {t.id} DESC LIMIT %s"
    for name, (t, columns, where) in _GROUPS.items()
}
_GROUP_COUNT = {
    name: f"SELECT COUNT(*) FROM {t} WHERE {t.status} = 'active' AND {where}"
    for name, (t, _columns, where) in _GROUPS.items()
}
GROUP_ROWS = {name: MemoryRow if t is M else IdentityRow for name, (t, _c, _w) in _GROUPS.items()}

# The prelude (memory/context.py:build_context_packet) in one statement: the source message, the
# agent's delivery cursor, the reset floor and the room's active summary (at most one: a unique
# constraint). Was five ORM reads of ~150–200 µs each. No row: the source does not exist.
# And whether either table holds a record the packet's reads above (``_PACKET_MEMORY``,
# ``_PACKET_IDENTITY``) would return, by their own predicates: most rooms hold none, and then
# neither read runs (two statements of a packet's four, docs/DECISIONS.md D71). One EXISTS per
# memory scope, each a search of the scope index (one EXISTS of the three ORed walked the status
# index through every active record of the room).
PACKET_ENTRY_COLUMNS = (
    "seq",
    "event_id",
    "event_type",
    "actor_id",
    "actor_display_name",
    "reply_to_event_id",
    "forwarded_event_id",
    "body",
)  # what memory/transcript.py:entry reads
SUMMARY_COLUMNS = ("summary_id", "from_seq", "through_seq", "content", "generator_actor_id")
_e, _s, C, X = Names(Event, "e"), Names(Summary, "s"), Names(DeliveryCursor), Names(ContextReset)
_PACKET_PRELUDE = f"""
    SELECT {_e.list(PACKET_ENTRY_COLUMNS)}, {_e.correlation_id}, {_e.root_correlation_id},
        (SELECT {C.last_delivered_seq} FROM {C} WHERE {C.actor_id} = %s AND {C.room_id} = %s),
        (SELECT MAX({X.through_seq}) FROM {X} WHERE {X.room_id} = %s),
        {_s.list(SUMMARY_COLUMNS)},
        {
    " OR ".join(
        f"EXISTS (SELECT 1 FROM {M} WHERE {M.status} = 'active' AND {scope})"
        for scope in _packet_memory_scopes(f"{_e.correlation_id}, {_e.root_correlation_id}")
    )
},
        EXISTS (SELECT 1 FROM {ID} WHERE {_PACKET_IDENTITY_WHERE})
    FROM {_e}
    LEFT JOIN {_s} ON {_s.room_id} = %s AND {_s.status} = 'active'
    WHERE {_e.event_id} = %s"""

# The authors' names a packet shows (memory/context.py): ~18 µs of CPU where the ORM's values_list cost ~110.
AC = Names(Actor)
_ACTOR_NAMES = f"SELECT {AC.actor_id}, {AC.display_name} FROM {AC}"

# The floor of the room's latest native reset (memory/native_reset.py:mark), read by every lane
# before every Turn (D41): the ORM's aggregate costs ~250 µs of CPU, this ~10 µs.
_NATIVE_RESET_MARK = f"SELECT MAX({X.through_seq}) FROM {X} WHERE {X.room_id} = %s AND {X.reset_native_sessions} = %s"

# The delivery cursor moves forward after a delivered Turn (turns/lifecycle.py:advance_delivery_cursor):
# the usual case, a row behind ``through_seq``. The ORM's conditional update cost ~250 µs of CPU.
# ``updated_at`` is not written, as the ORM's ``update()`` does not write ``auto_now`` fields either.
_ADVANCE_DELIVERY_CURSOR = f"""
    UPDATE {C} SET {C.last_delivered_seq} = %s
    WHERE {C.actor_id} = %s AND {C.room_id} = %s AND {C.last_delivered_seq} < %s"""

# Room context (memory/transcript.py:context_events) strictly between two seqs, minus the events
# of a JSON list of ids (the reply chain: a fixed statement whatever its length). ``IS NOT`` keeps
# bodies without a "kind" (or with a null one), as the ORM's has_key guard does.
E = Names(Event)


def _context_range_sql(d, event_type: str) -> str:
    return f"""
    FROM {E}
    WHERE {E.room_id} = %s AND {event_type} IN ({placeholders(CONTEXT_TYPES)})
        AND {d.json_text(E.body, "kind")} {d.is_distinct_from} %s
        AND {E.seq} > %s AND {E.seq} < %s AND {E.event_id} NOT IN {d.json_list()}"""


# The unread rows are read newest first and the caller stops once the budget is full, so they must
# come straight off the seq (rowid) range: with the event_type index SQLite sorted the whole range
# before the first row (6.3 s at 1,000,000 unread events; 0.3 ms this way, docs/DECISIONS.md D56).
# ``not_indexed`` keeps SQLite's planner off that index; the rows and their order are the same.
_PACKET_UNREAD = per_engine(
    lambda d: (
        f"SELECT {E.list(PACKET_ENTRY_COLUMNS)} "
        f"{_context_range_sql(d, d.not_indexed(E.event_type))} ORDER BY {E.seq} DESC"
    )
)
_PACKET_UNREAD_COUNT = per_engine(lambda d: f"SELECT COUNT(*) {_context_range_sql(d, E.event_type)}")

# Compaction's window (memory/compaction.py:plan_compaction): the same room context, oldest first,
# one bounded read at a time (keyset on seq), so a pass over 1,000,000 uncompacted events reads
# only what its input budget takes (docs/DECISIONS.md D62). ``not_indexed`` as for the unread rows:
# the rows come straight off the seq range, never sorted whole.
_CONTEXT_WINDOW = per_engine(
    lambda d: (
        f"SELECT {E.list(PACKET_ENTRY_COLUMNS)} "
        f"{_context_range_sql(d, d.not_indexed(E.event_type))} ORDER BY {E.seq} LIMIT %s"
    )
)
# The seq of the (offset + 1)-th newest room context message in the range: where a manual pass that
# keeps the newest messages verbatim ends, without counting the range.
_CONTEXT_FROM_NEWEST = per_engine(
    lambda d: (
        f"SELECT {E.seq} {_context_range_sql(d, d.not_indexed(E.event_type))} ORDER BY {E.seq} DESC LIMIT 1 OFFSET %s"
    )
)

# One step up a reply chain: the parent, if it is room context above the reset floor (a watch
# brief is not: an observer's reply answers one, and it stays out of every other packet).
_PACKET_PARENT = per_engine(
    lambda d: (
        f"""
    SELECT {E.list(PACKET_ENTRY_COLUMNS)} FROM {E}
    WHERE {E.event_id} = %s AND {E.event_type} IN ({placeholders(CONTEXT_TYPES)})
        AND {d.json_text(E.body, "kind")} {d.is_distinct_from} %s AND {E.seq} > %s"""
    )
)


def bump_dated_rollup(*, room_id: str, actor_id: str, day: date, chars: int, through_seq: int, now: datetime) -> bool:
    """Add one Turn to the day's rollup row; False when that row does not exist yet."""
    return (
        execute(
            on_this_engine(_BUMP_DATED_ROLLUP),
            [
                chars,
                through_seq,
                adapt_datetime(now),
                adapt_datetime(now),
                room_id,
                actor_id,
                connection.ops.adapt_datefield_value(day),
            ],
        )
        == 1
    )


def insert_dated_source(
    *,
    turn_id: str,
    room_id: str,
    actor_id: str,
    local_date: date,
    source_event_id: str,
    source_seq: int,
    response_event_id: str,
    response_seq: int,
    source_chars: int,
    terminal_at: datetime,
) -> None:
    """One completed Turn waiting for the dated rollup; the parameters are ``DATED_SOURCE_INSERT_FIELDS``."""
    execute(
        _INSERT_DATED_SOURCE,
        [
            turn_id,
            room_id,
            actor_id,
            connection.ops.adapt_datefield_value(local_date),
            source_event_id,
            source_seq,
            response_event_id,
            response_seq,
            source_chars,
            adapt_datetime(terminal_at),
        ],
    )


def _memory_rows(rows: list[tuple]) -> list[MemoryRow]:
    # On SQLite the datetime arrives as text, converted as the model's field would be; PostgreSQL's
    # driver returns an aware datetime already.
    if connection.vendor != "sqlite":
        return [MemoryRow(*row) for row in rows]
    convert = connection.ops.convert_datetimefield_value
    at = MemoryRow._fields.index("created_at")
    return [MemoryRow(*row[:at], convert(row[at], None, connection), *row[at + 1 :]) for row in rows]


def _rows(row_type: type, sql: str, params: list) -> list:
    rows = all_rows(sql, params)
    return _memory_rows(rows) if row_type is MemoryRow else [IdentityRow(*row) for row in rows]


def packet_memory(*, actor_id: str, room_id: str, correlations: set[str], limit: int) -> list[MemoryRow]:
    """Active memory records of the agent (core, dated), the room and the correlations."""
    first, *rest = sorted(correlations)
    return _rows(
        MemoryRow, _PACKET_MEMORY, [actor_id, *AGENT_MEMORY_TYPES, room_id, first, rest[0] if rest else first, limit]
    )


def packet_identity(*, actor_id: str, limit: int) -> list[IdentityRow]:
    """Active identity records about the agent."""
    return _rows(IdentityRow, _PACKET_IDENTITY, [actor_id, limit])


def group_page(group: str, params: list, *, below_id: int, limit: int) -> list:
    """Up to ``limit`` active records of ``group`` (a key of ``_GROUPS``, its parameters in order)
    with an id below ``below_id``, newest first."""
    return _rows(GROUP_ROWS[group], _GROUP_PAGE[group], [*params, below_id, limit])


def group_count(group: str, params: list) -> int:
    return one_row(_GROUP_COUNT[group], params)[0]


@dataclass(frozen=True, slots=True)
class PacketPrelude:
    source: dict[str, Any]  # PACKET_ENTRY_COLUMNS, correlation_id, root_correlation_id
    cursor: int  # the agent's last delivered seq, 0 without a cursor
    floor: int  # the reset floor, 0 without a reset
    summary: Summary | None  # the room's active Summary (only SUMMARY_COLUMNS loaded) or None
    any_memory: bool = True  # False: packet_memory would return no row
    any_identity: bool = True  # False: packet_identity would return no row


def _entry(row: tuple) -> dict[str, Any]:
    event = dict(zip(PACKET_ENTRY_COLUMNS, row, strict=True))
    event["body"] = json.loads(event["body"])  # as the JSONField reads it (the column is NOT NULL)
    return event


def packet_prelude(*, actor_id: str, room_id: str, source_event_id: str) -> PacketPrelude | None:
    """What a packet reads before anything optional; None when the source event does not exist."""
    row = one_row(
        _PACKET_PRELUDE,
        [actor_id, room_id, room_id, actor_id, *AGENT_MEMORY_TYPES, room_id, actor_id, room_id, source_event_id],
    )
    if row is None:
        return None
    width = len(PACKET_ENTRY_COLUMNS)
    source = _entry(row[:width])
    source["correlation_id"], source["root_correlation_id"], delivered, floor = row[width : width + 4]
    *summary_row, any_memory, any_identity = row[width + 4 :]
    summary = None if summary_row[0] is None else Summary.from_db(DEFAULT_DB_ALIAS, SUMMARY_COLUMNS, summary_row)
    return PacketPrelude(source, delivered or 0, floor or 0, summary, bool(any_memory), bool(any_identity))


def _context_range(room_id: str, after_seq: int, before_seq: int, excluded: list[str]) -> list:
    return [room_id, *CONTEXT_TYPES, WATCH_BRIEF_KIND, after_seq, before_seq, json.dumps(excluded)]


def packet_unread(*, room_id: str, after_seq: int, before_seq: int, excluded: list[str]):
    """Room context with after_seq < seq < before_seq, newest first, as entry dicts; read in chunks
    of 200 rows, so a caller that stops early does not pay for the rest."""
    with connection.cursor() as cursor:
        cursor.execute(on_this_engine(_PACKET_UNREAD), _context_range(room_id, after_seq, before_seq, excluded))
        while rows := cursor.fetchmany(200):
            yield from map(_entry, rows)


def packet_unread_count(*, room_id: str, after_seq: int, before_seq: int, excluded: list[str]) -> int:
    with connection.cursor() as cursor:
        cursor.execute(on_this_engine(_PACKET_UNREAD_COUNT), _context_range(room_id, after_seq, before_seq, excluded))
        return cursor.fetchone()[0]


def context_window(*, room_id: str, after_seq: int, before_seq: int, size: int) -> list[dict[str, Any]]:
    """The first ``size`` room context messages with after_seq < seq < before_seq, oldest first, as
    entry dicts."""
    with connection.cursor() as cursor:
        cursor.execute(on_this_engine(_CONTEXT_WINDOW), [*_context_range(room_id, after_seq, before_seq, []), size])
        return [_entry(row) for row in cursor.fetchall()]


def context_seq_from_newest(*, room_id: str, after_seq: int, before_seq: int, offset: int) -> int | None:
    """The seq of the room context message ``offset`` places below the newest in the range, None when
    the range holds ``offset`` messages or fewer."""
    with connection.cursor() as cursor:
        cursor.execute(
            on_this_engine(_CONTEXT_FROM_NEWEST), [*_context_range(room_id, after_seq, before_seq, []), offset]
        )
        row = cursor.fetchone()
    return None if row is None else row[0]


def packet_parent(event_id: str, floor: int) -> dict[str, Any] | None:
    """The event ``event_id`` as an entry dict if it is room context above ``floor``, else None."""
    row = one_row(on_this_engine(_PACKET_PARENT), [event_id, *CONTEXT_TYPES, WATCH_BRIEF_KIND, floor])
    return None if row is None else _entry(row)


def actor_names() -> dict[str, str]:
    """Every actor's display name by actor id: the names a packet shows beside its records' authors."""
    return dict(all_rows(_ACTOR_NAMES, []))


def native_reset_mark(room_id: str) -> int:
    """The floor of the room's latest native reset, 0 when there was none."""
    return one_row(_NATIVE_RESET_MARK, [room_id, True])[0] or 0


def advance_delivery_cursor(*, actor_id: str, room_id: str, through_seq: int) -> bool:
    """Move the agent's cursor up to ``through_seq``; False when no row is behind it (none yet, or
    already there)."""
    return execute(_ADVANCE_DELIVERY_CURSOR, [through_seq, actor_id, room_id, through_seq]) == 1

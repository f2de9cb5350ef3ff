"""The raw SQL of the turns app: the hot statements of a Turn on turns_turn and turns_turnattempt.

The rules are rooms/sql.py's (docs/DECISIONS.md D20, D32): names from the models' ``_meta``,
IN-lists sized from their constant tuples, every value a parameter adapted as the field stores it,
and a parity test per statement (tests/unit/test_sql_parity.py). Statuses come from turns/states.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Field, Model

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
from rooms.models import Event
from turns.models import Turn, TurnAttempt
from turns.states import ACTIVE_STATUSES, CLAIM, IN_FLIGHT_STATUSES, QUEUED, START

T = Names(Turn)

# ---- a lane (turns/lifecycle.py) ------------------------------------------------------------------

# queued → dispatching (the claim's CAS, turns.states.CLAIM) and the columns the Claim needs, in one
# statement.
_CLAIM_TURN = f"""
    UPDATE {T} SET {T.status} = %s, {T.binding_id} = %s
    WHERE {T.turn_id} = %s AND {T.status} = %s
    RETURNING {T.target_actor_id}, {T.source_event_id}, {T.correlation_id}, {T.root_correlation_id}"""

# A lane's FIFO head: the columns a lane uses; the rest load on access (``Turn.from_db``).
LANE_HEAD_COLUMNS = ("turn_id", "source_event_id", "target_actor_id", "status", "enqueue_seq")
_LANE_HEAD = f"""
    SELECT {T.list(LANE_HEAD_COLUMNS)} FROM {T}
    WHERE {T.target_actor_id} = %s AND {T.status} = %s ORDER BY {T.enqueue_seq} LIMIT 1"""

_TURN_STATUS = f"SELECT {T.status} FROM {T} WHERE {T.turn_id} = %s"

# The first native event: the native id always, dispatching → running (turns.states.START) only from
# dispatching (a Turn already cancelling stays cancelling). SQLite and PostgreSQL evaluate every SET against the old row.
_START_TURN = f"""
    UPDATE {T} SET {T.native_turn_id} = %s,
        {T.started_at} = CASE WHEN {T.status} = %s THEN %s ELSE {T.started_at} END,
        {T.status} = CASE WHEN {T.status} = %s THEN %s ELSE {T.status} END
    WHERE {T.turn_id} = %s"""

# The attempt (PROTOCOL §5): its INSERT and each dispatch phase one fixed statement (the ORM's forms
# cost ~100–350 µs of CPU each, about a tenth of a Turn's database side together).
A = Names(TurnAttempt)
# A claim's new attempt (``prepared``, ``not_delivered``: the model's defaults), every NOT NULL column
# the model would fill; the phases' timestamps and the native id stay NULL until their UPDATEs.
ATTEMPT_INSERT_FIELDS = (
    "attempt_id",
    "turn_id",
    "binding_id",
    "instance_id",
    "context_through_seq",
    "summary_through_seq",
    "dispatch_phase",
    "delivery_certainty",
    "claimed_at",
)


def _default(model: type[Model], name: str) -> Any:
    field = model._meta.get_field(name)
    assert isinstance(field, Field)  # a concrete column, not a relation's reverse side
    return field.get_default()


_ATTEMPT_DEFAULTS = {name: _default(TurnAttempt, name) for name in ("dispatch_phase", "delivery_certainty")}
_INSERT_ATTEMPT = f"INSERT INTO {A} ({A.list(ATTEMPT_INSERT_FIELDS)}) VALUES ({placeholders(ATTEMPT_INSERT_FIELDS)})"
# The write-ahead before the native prompt: only from ``prepared``.
_ATTEMPT_PROMPT_INVOKED = f"""
    UPDATE {A} SET {A.dispatch_phase} = %s, {A.delivery_certainty} = %s, {A.prompt_invoked_at} = %s
    WHERE {A.attempt_id} = %s AND {A.dispatch_phase} = %s"""
# The first native event: delivery is certain.
_ATTEMPT_STARTED = f"""
    UPDATE {A} SET {A.dispatch_phase} = %s, {A.delivery_certainty} = %s, {A.native_turn_id} = %s, {A.started_at} = %s
    WHERE {A.attempt_id} = %s"""
_ATTEMPT_TERMINAL = f"UPDATE {A} SET {A.dispatch_phase} = %s, {A.terminal_at} = %s WHERE {A.attempt_id} = %s"

# The terminal CAS (the caller checks the move against turns.states first) and its columns.
_FINISH_TURN = f"""
    UPDATE {T} SET {T.status} = %s, {T.response_event_id} = %s, {T.terminal_event_id} = %s,
        {T.error_code} = %s, {T.partial_text} = %s, {T.terminal_at} = %s
    WHERE {T.turn_id} = %s AND {T.status} = %s"""

# Everything the terminal transaction reads: the Turn, its attempt (if any) and the source message.
_t, _a, _e = Names(Turn, "t"), Names(TurnAttempt, "a"), Names(Event, "e")
_TERMINAL_READ = f"""
    SELECT {_t.status}, {_t.target_actor_id}, {_t.source_event_id}, {_t.correlation_id}, {_t.root_correlation_id},
        {_t.command_type}, {_a.attempt_id}, {_a.delivery_certainty}, {_a.context_through_seq},
        {_a.summary_through_seq}, {_e.seq}, {_e.body}
    FROM {_t}
    LEFT JOIN {_a} ON {_a.attempt_id} = %s
    LEFT JOIN {_e} ON {_e.event_id} = {_t.source_event_id}
    WHERE {_t.turn_id} = %s"""

# ---- accepting a message (turns/actions.py) --------------------------------------------------------

# Unfinished Turns per target, for every target of a command at once (a JSON list of actor ids:
# one fixed statement whatever the number of targets; the turns_lane index serves it).
_ACTIVE = tuple(sorted(ACTIVE_STATUSES))
_IN_FLIGHT = tuple(sorted(IN_FLIGHT_STATUSES))
_ACTIVE_COUNTS = per_engine(
    lambda d: (
        f"""
    SELECT {T.target_actor_id}, COUNT(*) FROM {T}
    WHERE {T.target_actor_id} IN {d.json_list()} AND {T.status} IN ({placeholders(_ACTIVE)})
    GROUP BY {T.target_actor_id}"""
    )
)
# The target's in-flight Turn ahead of a newly queued one (what queue_metadata reports).
_IN_FLIGHT_AHEAD = f"""
    SELECT {T.turn_id} FROM {T}
    WHERE {T.target_actor_id} = %s AND {T.status} IN ({placeholders(_IN_FLIGHT)}) AND {T.enqueue_seq} < %s
    ORDER BY {T.enqueue_seq} LIMIT 1"""

# A new queued Turn, with every NOT NULL column the model would fill (the nullable ones stay NULL);
# the two defaults insert_turn does not take are the model's own.
TURN_INSERT_FIELDS = (
    "turn_id",
    "source_event_id",
    "target_actor_id",
    "adapter_id",
    "transport",
    "command_type",
    "parent_turn_id",
    "correlation_id",
    "root_correlation_id",
    "hop_count",
    "queued_event_id",
    "enqueue_seq",
    "status",
    "partial_text",
    "queued_at",
)
_TURN_DEFAULTS = {name: _default(Turn, name) for name in ("transport", "partial_text")}
_INSERT_TURN = f"INSERT INTO {T} ({T.list(TURN_INSERT_FIELDS)}) VALUES ({placeholders(TURN_INSERT_FIELDS)})"


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
    summary_through_seq: int | None  # the room checkpoint the attempt's packet carried, if any
    source_seq: int | None
    source_body: dict[str, Any] | None


def lane_head(actor_id: str) -> tuple[str, str, str, str, int] | None:
    """The oldest queued Turn of a lane, as ``LANE_HEAD_COLUMNS``, or None."""
    return one_row(_LANE_HEAD, [actor_id, QUEUED])


def claim_turn(turn_id: str, binding_id: str) -> tuple[str, str, str, str] | None:
    """CAS queued → dispatching. (target_actor_id, source_event_id, correlation_id,
    root_correlation_id) of the Turn it moved, or None when the Turn was not queued."""
    return one_row(_CLAIM_TURN, [CLAIM.new, binding_id, turn_id, CLAIM.current])


def turn_status(turn_id: str) -> str | None:
    row = one_row(_TURN_STATUS, [turn_id])
    return row[0] if row else None


def start_turn(turn_id: str, native_turn_id: str | None, started_at: datetime) -> None:
    execute(_START_TURN, [native_turn_id, START.current, adapt_datetime(started_at), START.current, START.new, turn_id])


def insert_attempt(
    *,
    attempt_id: str,
    turn_id: str,
    binding_id: str | None,
    instance_id: str | None,
    context_through_seq: int,
    summary_through_seq: int | None,
    claimed_at: datetime,
) -> None:
    execute(
        _INSERT_ATTEMPT,
        [
            attempt_id,
            turn_id,
            binding_id,
            instance_id,
            context_through_seq,
            summary_through_seq,
            _ATTEMPT_DEFAULTS["dispatch_phase"],
            _ATTEMPT_DEFAULTS["delivery_certainty"],
            adapt_datetime(claimed_at),
        ],
    )


def attempt_prompt_invoked(attempt_id: str, at: datetime) -> None:
    execute(_ATTEMPT_PROMPT_INVOKED, ["prompt_invoked", "unknown", adapt_datetime(at), attempt_id, "prepared"])


def attempt_started(attempt_id: str, native_turn_id: str | None, at: datetime) -> None:
    execute(_ATTEMPT_STARTED, ["native_started", "delivered", native_turn_id, adapt_datetime(at), attempt_id])


def attempt_terminal(attempt_id: str, at: datetime) -> None:
    execute(_ATTEMPT_TERMINAL, ["terminal", adapt_datetime(at), attempt_id])


def finish_turn(
    turn_id: str,
    current: str,
    new: str,
    *,
    response_event_id: str | None,
    terminal_event_id: str,
    error_code: str | None,
    partial_text: str,
    terminal_at: datetime,
) -> bool:
    """CAS ``current`` → ``new`` (a terminal status) with the terminal columns; False when the Turn
    is no longer ``current``. The caller has checked the move (turns.states.check_move)."""
    return (
        execute(
            _FINISH_TURN,
            [
                new,
                response_event_id,
                terminal_event_id,
                error_code,
                partial_text,
                adapt_datetime(terminal_at),
                turn_id,
                current,
            ],
        )
        == 1
    )


def terminal_read(turn_id: str, attempt_id: str | None) -> TerminalRead | None:
    """What ``finish`` reads, in one statement; None when the Turn does not exist."""
    row = one_row(_TERMINAL_READ, [attempt_id, turn_id])
    if row is None:
        return None
    *columns, body = row
    # As the JSONField reads it; a NULL column (or no source row) stays None.
    # The row's other columns are TerminalRead's fields before source_body, in order; mypy cannot
    # count a starred list, so it thinks they may reach source_body too.
    return TerminalRead(*columns, source_body=None if body is None else json.loads(body))  # type: ignore[misc]


def active_turn_counts(actor_ids: list[str]) -> dict[str, int]:
    """{actor_id: unfinished Turns} for the actors that have any."""
    return dict(all_rows(on_this_engine(_ACTIVE_COUNTS), [json.dumps(actor_ids), *_ACTIVE]))


def in_flight_ahead(actor_id: str, enqueue_seq: int) -> str | None:
    row = one_row(_IN_FLIGHT_AHEAD, [actor_id, *_IN_FLIGHT, enqueue_seq])
    return row[0] if row else None


def insert_turn(
    *,
    turn_id: str,
    source_event_id: str,
    target_actor_id: str,
    adapter_id: str,
    command_type: str,
    parent_turn_id: str | None,
    correlation_id: str,
    root_correlation_id: str,
    hop_count: int,
    queued_event_id: str,
    enqueue_seq: int,
    status: str,
    queued_at: datetime,
) -> None:
    execute(
        _INSERT_TURN,
        [
            turn_id,
            source_event_id,
            target_actor_id,
            adapter_id,
            _TURN_DEFAULTS["transport"],
            command_type,
            parent_turn_id,
            correlation_id,
            root_correlation_id,
            hop_count,
            queued_event_id,
            enqueue_seq,
            status,
            _TURN_DEFAULTS["partial_text"],
            adapt_datetime(queued_at),
        ],
    )

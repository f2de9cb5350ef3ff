"""The raw SQL of the rooms app (events and receipts); the toolkit every app's ``sql.py`` uses is
``groupx_site/store/sql.py``.

Why raw SQL at all: a Turn runs ~40 statements in one GIL-bound server process, and for the few
that run on every Turn or every message Django spends ~90–250 µs building SQL and model instances
against ~10 µs in SQLite (``python -m bench.turn_cost``, docs/PERFORMANCE.md "Fixes made (turn
cost)", docs/DECISIONS.md D20). Everything else stays ORM.

The rules (docs/DECISIONS.md D32): each app writes SQL only for its own tables, in its ``sql.py``
(``rooms/sql.py``, ``turns/sql.py``, ``memory/sql.py``); table and column names come from the
models' ``_meta`` when the module is imported (``Names``: a renamed or removed field fails the
import); an IN-list gets one placeholder per item of the constant tuple it binds
(``placeholders``); every value is a parameter, adapted exactly as the model's field would store
it; the statements go through Django's cursor, so transactions, error wrapping and query capture
behave as for ORM queries. Each statement has a parity test against the ORM
(tests/unit/test_sql_parity.py).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from groupx_site.store.sql import (
    Names,
    adapt_datetime,
    adapt_json,
    execute,
    one_row,
    placeholders,
)
from rooms.models import ClientCommand, Event

# ---- the room log ----------------------------------------------------------------------------------

E = Names(Event)
# Every column but seq (the database assigns it), in the order insert_event binds them.
EVENT_INSERT_FIELDS = (
    "event_id",
    "room_id",
    "event_type",
    "actor_id",
    "actor_kind",
    "actor_display_name",
    "instance_id",
    "targets",
    "reply_to_event_id",
    "forwarded_event_id",
    "causation_id",
    "correlation_id",
    "root_correlation_id",
    "idempotency_key",
    "occurred_at",
    "body",
    "provenance",
)
_INSERT_EVENT = f"""
    INSERT INTO {E} ({E.list(EVENT_INSERT_FIELDS)})
    VALUES ({placeholders(EVENT_INSERT_FIELDS)})
    RETURNING {E.seq}"""


def insert_event(
    *,
    event_id: str,
    room_id: str,
    event_type: str,
    actor_id: str,
    actor_kind: str,
    actor_display_name: str,
    instance_id: str | None,
    targets: list[str],
    reply_to_event_id: str | None,
    forwarded_event_id: str | None,
    causation_id: str | None,
    correlation_id: str,
    root_correlation_id: str,
    idempotency_key: str | None,
    occurred_at: datetime,
    body: dict[str, Any],
    provenance: dict[str, Any] | None,
) -> int:
    """Append one row to the room log; returns its seq. The parameters are ``EVENT_INSERT_FIELDS``, in
    that order (six calls per Turn: spelled out, not looped over)."""
    return one_row(
        _INSERT_EVENT,
        [
            event_id,
            room_id,
            event_type,
            actor_id,
            actor_kind,
            actor_display_name,
            instance_id,
            adapt_json(targets),
            reply_to_event_id,
            forwarded_event_id,
            causation_id,
            correlation_id,
            root_correlation_id,
            idempotency_key,
            adapt_datetime(occurred_at),
            adapt_json(body),
            adapt_json(provenance),
        ],
    )[0]


# ---- accepting a command (rooms/commands.py) -------------------------------------------------------

R = Names(ClientCommand)
# A command's idempotency receipt (unique per binding and clientCommandId).
_FIND_RECEIPT = f"""
    SELECT {R.command_type}, {R.canonical_hash}, {R.result} FROM {R}
    WHERE {R.source_binding_id} = %s AND {R.client_command_id} = %s"""
_RECEIPT_FIELDS = (
    "command_id",
    "source_binding_id",
    "client_command_id",
    "command_type",
    "canonical_hash",
    "result",
    "accepted_at",
)
_INSERT_RECEIPT = f"INSERT INTO {R} ({R.list(_RECEIPT_FIELDS)}) VALUES ({placeholders(_RECEIPT_FIELDS)})"


def find_receipt(binding_id: str, client_command_id: str) -> tuple[str, str, Any] | None:
    """(command_type, canonical_hash, result) of the receipt, or None."""
    row = one_row(_FIND_RECEIPT, [binding_id, client_command_id])
    return None if row is None else (row[0], row[1], json.loads(row[2]))


def insert_receipt(
    *,
    command_id: str,
    binding_id: str,
    client_command_id: str,
    command_type: str,
    digest: str,
    result: Any,
    accepted_at: datetime,
) -> None:
    execute(
        _INSERT_RECEIPT,
        [
            command_id,
            binding_id,
            client_command_id,
            command_type,
            digest,
            adapt_json(result),
            adapt_datetime(accepted_at),
        ],
    )

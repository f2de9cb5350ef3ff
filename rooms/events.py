"""The room's event builders: keyword-only arguments, one builder per family of event types.

Every type is declared in ``rooms/event_types.py``; ``append_event`` and ``publish_transient``
refuse an undeclared type, a forbidden namespace, the wrong durability or a body lacking a
declared key (``UndeclaredEventType``), so no misspelt type reaches the log or the page.
Durable builders append a row inside the caller's transaction and wake SSE readers on commit;
transient builders publish straight to the bus and are never stored (PROTOCOL §2.1, §2.2).
Envelopes never carry binding ids or native ids.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, overload

from django.db import DEFAULT_DB_ALIAS, transaction
from django.utils import timezone

from groupx_site.core.ids import event_id as new_event_id
from groupx_site.core.text import json_text
from rooms import bus, event_types, sql
from rooms.models import ROOM_ID, SCHEMA, Event


@dataclass(frozen=True)
class ActorRef:
    actor_id: str
    kind: str
    display_name: str
    instance_id: str | None = None

    def as_json(self) -> dict[str, Any]:
        ref = {"actorId": self.actor_id, "kind": self.kind, "displayName": self.display_name}
        if self.instance_id:
            ref["instanceId"] = self.instance_id
        return ref


SYSTEM = ActorRef("system:groupx", "system", "GroupX")
WEB_USER = ActorRef("user:web", "user", "You")

ENVELOPE_FIELDS = (
    "seq",
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


def iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds")


def envelope_from_row(row: dict[str, Any]) -> dict[str, Any]:
    """The public envelope of a stored event (a ``values(*ENVELOPE_FIELDS)`` row)."""
    actor = {"actorId": row["actor_id"], "kind": row["actor_kind"], "displayName": row["actor_display_name"]}
    if row["instance_id"]:
        actor["instanceId"] = row["instance_id"]
    envelope: dict[str, Any] = {
        "schema": SCHEMA,
        "eventId": row["event_id"],
        "seq": row["seq"],
        "roomId": row["room_id"],
        "type": row["event_type"],
        "actor": actor,
        "to": row["targets"],
        "correlationId": row["correlation_id"],
        "rootCorrelationId": row["root_correlation_id"],
        "occurredAt": iso(row["occurred_at"]),
        "durability": "durable",
        "body": row["body"],
    }
    for key, field in (
        ("replyToEventId", "reply_to_event_id"),
        ("forwardedEventId", "forwarded_event_id"),
        ("causationId", "causation_id"),
        ("idempotencyKey", "idempotency_key"),
        ("provenance", "provenance"),
    ):
        if row[field]:
            envelope[key] = row[field]
    return envelope


# ``append_event`` builds its Event from the values in this order (the model's concrete fields).
EVENT_FIELDS_IN_ORDER = ("seq", *sql.EVENT_INSERT_FIELDS)
if tuple(field.attname for field in Event._meta.concrete_fields) != EVENT_FIELDS_IN_ORDER:
    raise ImportError("rooms.models.Event's fields moved: append_event builds its Event in the old order")


@overload
def append_event(
    *,
    event_type: str,
    actor: ActorRef,
    correlation_id: str,
    root_correlation_id: str | None = None,
    to: list[str] | None = None,
    body: dict[str, Any] | None = None,
    causation_id: str | None = None,
    reply_to_event_id: str | None = None,
    forwarded_event_id: str | None = None,
    idempotency_key: str | None = None,
    provenance: dict[str, Any] | None = None,
    returns_event: Literal[True] = True,
    event_id: str | None = None,
) -> Event: ...


@overload
def append_event(
    *,
    event_type: str,
    actor: ActorRef,
    correlation_id: str,
    root_correlation_id: str | None = None,
    to: list[str] | None = None,
    body: dict[str, Any] | None = None,
    causation_id: str | None = None,
    reply_to_event_id: str | None = None,
    forwarded_event_id: str | None = None,
    idempotency_key: str | None = None,
    provenance: dict[str, Any] | None = None,
    returns_event: Literal[False],
    event_id: str | None = None,
) -> None: ...


def append_event(
    *,
    event_type: str,
    actor: ActorRef,
    correlation_id: str,
    root_correlation_id: str | None = None,
    to: list[str] | None = None,
    body: dict[str, Any] | None = None,
    causation_id: str | None = None,
    reply_to_event_id: str | None = None,
    forwarded_event_id: str | None = None,
    idempotency_key: str | None = None,
    provenance: dict[str, Any] | None = None,
    returns_event: bool = True,
    event_id: str | None = None,
) -> Event | None:
    """Append one durable event. Call inside ``transaction.atomic()``; readers wake on commit.
    ``event_id``: an id drawn beforehand (``new_event_id``), for a command whose earlier events
    must name this one as their cause (a steer's guidance and Turn, PROTOCOL §6.7).
    ``returns_event=False``: for a caller that reads nothing of it (the claim, ``turn.started``),
    no ``Event`` is built for it (~3 µs of a Turn's writer thread each; docs/DECISIONS.md D72)."""
    body = body or {}
    event_types.check(event_type, event_types.DURABLE, body)  # an undeclared or forbidden type never enters the store
    # In the order of the model's fields after seq (EVENT_FIELDS_IN_ORDER below): ``from_db`` takes them so.
    values = {
        "event_id": event_id or new_event_id(),
        "room_id": ROOM_ID,
        "event_type": event_type,
        "actor_id": actor.actor_id,
        "actor_kind": actor.kind,
        "actor_display_name": actor.display_name,
        "instance_id": actor.instance_id,
        "targets": to or [],
        "reply_to_event_id": reply_to_event_id,
        "forwarded_event_id": forwarded_event_id,
        "causation_id": causation_id,
        "correlation_id": correlation_id,
        "root_correlation_id": root_correlation_id or correlation_id,
        "idempotency_key": idempotency_key,
        "occurred_at": timezone.now(),
        "body": body,
        "provenance": provenance,
    }
    # One INSERT … RETURNING seq (rooms/sql.py) instead of Model.objects.create: the same row,
    # a sixth of the CPU, and this runs six times per Turn. The caller gets the same saved instance,
    # built as a read builds one (``from_db``: positional values, the state save() leaves), which
    # costs a third of the keyword constructor (docs/DECISIONS.md D64).
    row = {"seq": sql.insert_event(**values), **values}
    # The streams get the committed frame itself (encoded now: exactly the row just written, even
    # if the caller changes ``body`` later), so the SSE tail need not read the table back.
    frame = durable_frame(envelope_from_row(row)).encode() if bus.wants_frames() else None
    transaction.on_commit(functools.partial(bus.committed, row["seq"], frame))
    return Event.from_db(DEFAULT_DB_ALIAS, None, row.values()) if returns_event else None


def durable_frame(envelope: dict[str, Any]) -> str:
    return f"id: {envelope['seq']}\ndata: {json_text(envelope)}\n\n"


def publish_transient(
    *,
    event_type: str,
    actor: ActorRef,
    body: dict[str, Any],
    correlation_id: str,
    to: list[str] | None = None,
    root_correlation_id: str | None = None,
) -> dict[str, Any]:
    """Send a transient event to live streams only: no seq, no ``id:``, never replayed."""
    event_types.check(event_type, event_types.TRANSIENT, body)
    envelope = {
        "schema": SCHEMA,
        "eventId": new_event_id(),
        "seq": None,
        "roomId": ROOM_ID,
        "type": event_type,
        "actor": actor.as_json(),
        "to": to or [],
        "correlationId": correlation_id,
        "rootCorrelationId": root_correlation_id or correlation_id,
        "occurredAt": iso(timezone.now()),
        "durability": "transient",
        "body": body,
    }
    bus.publish_transient(envelope)
    return envelope


# ---- durable builders ------------------------------------------------------------------------


def message_created(
    *,
    actor: ActorRef,
    content: str,
    to: list[str],
    correlation_id: str,
    root_correlation_id: str | None = None,
    source_kind: str,
    reply_to_event_id: str | None = None,
    forwarded_event_id: str | None = None,
    causation_id: str | None = None,
    idempotency_key: str | None = None,
    extra_body: dict[str, Any] | None = None,
) -> Event:
    return append_event(
        event_type=event_types.MESSAGE_CREATED,
        actor=actor,
        to=to,
        body={"content": content, **(extra_body or {})},
        correlation_id=correlation_id,
        root_correlation_id=root_correlation_id,
        reply_to_event_id=reply_to_event_id,
        forwarded_event_id=forwarded_event_id,
        causation_id=causation_id,
        idempotency_key=idempotency_key,
        provenance={"sourceKind": source_kind, "authorActorId": actor.actor_id},
    )


def turn_queued(
    *,
    turn_id: str,
    source_event: Event,
    target_actor_id: str,
    adapter_id: str,
    hop_count: int,
    transport: str = "structured",
    causation_id: str | None = None,
) -> Event:
    return append_event(
        event_type=event_types.TURN_QUEUED,
        actor=SYSTEM,
        to=[target_actor_id],
        body={
            "turnId": turn_id,
            "sourceEventId": source_event.event_id,
            "targetActorId": target_actor_id,
            "adapterId": adapter_id,
            "transport": transport,
            "hopCount": hop_count,
        },
        correlation_id=source_event.correlation_id,
        root_correlation_id=source_event.root_correlation_id,
        causation_id=causation_id or source_event.event_id,
        idempotency_key=f"turn:{turn_id}:queued",
        provenance={"sourceKind": "system"},
    )


@overload
def turn_event(
    *,
    event_type: str,
    actor: ActorRef,
    turn_id: str,
    target_actor_id: str,
    correlation_id: str,
    root_correlation_id: str,
    body: dict[str, Any],
    idempotency_key: str | None = None,
    causation_id: str | None = None,
    source_kind: str = "system",
    returns_event: Literal[True] = True,
) -> Event: ...


@overload
def turn_event(
    *,
    event_type: str,
    actor: ActorRef,
    turn_id: str,
    target_actor_id: str,
    correlation_id: str,
    root_correlation_id: str,
    body: dict[str, Any],
    idempotency_key: str | None = None,
    causation_id: str | None = None,
    source_kind: str = "system",
    returns_event: Literal[False],
) -> None: ...


def turn_event(
    *,
    event_type: str,
    actor: ActorRef,
    turn_id: str,
    target_actor_id: str,
    correlation_id: str,
    root_correlation_id: str,
    body: dict[str, Any],
    idempotency_key: str | None = None,
    causation_id: str | None = None,
    source_kind: str = "system",
    returns_event: bool = True,
) -> Event | None:
    """turn.dispatched | turn.started | turn.completed | failed | cancelled | interrupted and the
    turn's reasoning/tool records: all carry the turn id and the turn's correlation."""
    return append_event(
        event_type=event_type,
        actor=actor,
        to=[target_actor_id],
        body={"turnId": turn_id, **body},
        correlation_id=correlation_id,
        root_correlation_id=root_correlation_id,
        causation_id=causation_id or turn_id,
        idempotency_key=idempotency_key,
        provenance={"sourceKind": source_kind},
        returns_event=returns_event,
    )


def session_event(*, event_type: str, actor: ActorRef, body: dict[str, Any]) -> Event:
    """session.starting | ready | resumed | failed | stopped (durable, PROTOCOL §2.1; only session.retrying is transient)."""
    return append_event(
        event_type=event_type,
        actor=actor,
        body=body,
        correlation_id=f"session:{actor.actor_id}",
        provenance={"sourceKind": "system", "subjectActorId": actor.actor_id},
    )

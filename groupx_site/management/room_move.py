"""Moving a room from its SQLite file into PostgreSQL (``manage.py move_to_postgresql``, D54).

Every row of every GroupX model is copied with its keys (seq, ids) unchanged, in one transaction
on the target; then each table's count and a hash of the whole log are compared between the two
databases inside that transaction, and any difference rolls the copy back. The target must hold
no room yet: the migrations run on it first (they seed the built-in actors, which the copy
replaces); any other row already there is a refusal, not a merge.

Not moved: the runtime's worker rows (a lease belongs to the processes of the old store, D45) and
Django's own tables (admin users, sessions, content types: the new store's migrations make their
own). The SQLite file is only read.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from django.apps import apps
from django.core.management import call_command
from django.core.management.color import no_style
from django.db import connections, models, transaction

from groupx_site.store.postgresql import postgresql_database

TARGET = "move_target"
SEEDED_BY_MIGRATIONS = {"agents.actor", "agents.agentinstance", "agents.sessionbinding"}
NOT_MOVED = {"agents.runtimeworker", "agents.agentlease"}  # the leases belong to the old processes
BATCH = 1000


class MoveRefused(Exception):
    """The target is not a place to move into, or the copy does not match: nothing was kept."""


def add_target(url: str, *, lock_timeout_ms: int) -> str:
    """The PostgreSQL database at ``url`` as a second connection alias."""
    both = {
        "default": connections.settings["default"],
        TARGET: postgresql_database(url, busy_timeout_ms=lock_timeout_ms),
    }
    connections.settings[TARGET] = connections.configure_settings(both)[TARGET]
    return TARGET


def room_models() -> list[type[models.Model]]:
    """GroupX's own models (not Django's), in dependency order."""
    found = [
        model
        for model in apps.get_models()
        if not model.__module__.startswith("django.") and model._meta.label_lower not in NOT_MOVED
    ]
    return sorted(found, key=lambda model: model._meta.label_lower)


def log_hash(alias: str) -> str:
    """SHA-256 over every event in seq order: its seq, id, type, actor, targets, links and body as
    canonical JSON (the datetime as ISO-8601 UTC): equal hashes, the same log."""
    from rooms.models import Event

    digest = hashlib.sha256()
    for event in Event.objects.using(alias).order_by("seq").iterator(chunk_size=BATCH):
        digest.update(
            json.dumps(
                [
                    event.seq,
                    event.event_id,
                    event.room_id,
                    event.event_type,
                    event.actor_id,
                    event.actor_kind,
                    event.actor_display_name,
                    event.instance_id,
                    event.targets,
                    event.reply_to_event_id,
                    event.forwarded_event_id,
                    event.causation_id,
                    event.correlation_id,
                    event.root_correlation_id,
                    event.idempotency_key,
                    event.occurred_at.isoformat(),
                    event.body,
                    event.provenance,
                ],
                sort_keys=True,
                ensure_ascii=False,
                separators=(",", ":"),
            ).encode()
        )
        digest.update(b"\n")
    return digest.hexdigest()


def counts(alias: str, room: Iterable[type[models.Model]]) -> dict[str, int]:
    return {model._meta.db_table: model.objects.using(alias).count() for model in room}


def refuse_unless_empty(room: list[type[models.Model]]) -> None:
    taken = {table: count for table, count in counts(TARGET, room).items() if count}
    seeded = {model._meta.db_table for model in room if model._meta.label_lower in SEEDED_BY_MIGRATIONS}
    if set(taken) - seeded:
        held = ", ".join(f"{table} ({count} rows)" for table, count in sorted(taken.items()) if table not in seeded)
        raise MoveRefused(f"the target database is not empty: {held}. Move into a new, empty database.")


def copy(room: list[type[models.Model]], source: str) -> None:
    target = connections[TARGET]
    with target.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")  # rows arrive table by table, not in FK order
    for model in room:
        if model._meta.label_lower in SEEDED_BY_MIGRATIONS:
            model.objects.using(TARGET).all().delete()  # the migrations' seed: the source has its own
        batch: list[models.Model] = []
        for row in model.objects.using(source).order_by("pk").iterator(chunk_size=BATCH):
            batch.append(row)
            if len(batch) == BATCH:
                model.objects.using(TARGET).bulk_create(batch)
                batch = []
        if batch:
            model.objects.using(TARGET).bulk_create(batch)
    # Identity columns continue after the copied ids (seq has none: its trigger takes MAX + 1).
    with target.cursor() as cursor:
        for sql in target.ops.sequence_reset_sql(no_style(), room):
            cursor.execute(sql)


def move(url: str, *, source: str = "default", lock_timeout_ms: int = 5000, out=None) -> dict:
    """Copy the room at ``source`` into the database at ``url``; the report of what was checked."""
    if connections[source].vendor != "sqlite":
        raise MoveRefused("the room to move must be on SQLite (groupx.json names no storage.url)")
    add_target(url, lock_timeout_ms=lock_timeout_ms)
    call_command("migrate", database=TARGET, interactive=False, verbosity=0)
    room = room_models()
    with transaction.atomic(using=TARGET):
        refuse_unless_empty(room)
        copy(room, source)
        before, after = counts(source, room), counts(TARGET, room)
        if before != after:
            mismatched = {table: (before[table], after[table]) for table in before if before[table] != after[table]}
            raise MoveRefused(f"the copy's counts differ (source, target): {mismatched}; nothing was kept")
        source_hash, target_hash = log_hash(source), log_hash(TARGET)
        if source_hash != target_hash:
            raise MoveRefused(f"the log's hash differs ({source_hash} != {target_hash}); nothing was kept")
    return {"tables": after, "events": after.get("rooms_event", 0), "logHash": target_hash}

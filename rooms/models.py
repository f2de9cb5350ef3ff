"""The durable room log and the idempotency receipts.

``Event.seq`` is a BigAutoField, which Django creates as ``INTEGER PRIMARY KEY AUTOINCREMENT`` on
SQLite: seq values are never reused, and because every write is a ``BEGIN IMMEDIATE`` transaction,
commit order is seq order, so a reader of ``seq > cursor`` never skips an event.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from groupx_site.core.text import StoredJSON

ROOM_ID = "room:main"
SCHEMA = "groupx.event/0.1"


class Event(models.Model):
    seq = models.BigAutoField(primary_key=True)
    event_id = models.CharField(max_length=64, unique=True)
    room_id = models.CharField(max_length=64, default=ROOM_ID)
    event_type = models.CharField(max_length=64, db_index=True)
    actor_id = models.CharField(max_length=128)
    actor_kind = models.CharField(max_length=16)
    actor_display_name = models.CharField(max_length=128)
    instance_id = models.CharField(max_length=128, null=True, blank=True)
    targets = models.JSONField(default=list, encoder=StoredJSON)
    reply_to_event_id = models.CharField(max_length=64, null=True, blank=True)
    forwarded_event_id = models.CharField(max_length=64, null=True, blank=True)
    causation_id = models.CharField(max_length=64, null=True, blank=True)
    correlation_id = models.CharField(max_length=64)
    root_correlation_id = models.CharField(max_length=64)
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)
    occurred_at = models.DateTimeField()
    body = models.JSONField(default=dict, encoder=StoredJSON)
    provenance = models.JSONField(null=True, blank=True, encoder=StoredJSON)

    class Meta:
        ordering = ["seq"]
        indexes = [models.Index(fields=["correlation_id", "seq"], name="events_correlation_seq")]
        constraints = [
            models.UniqueConstraint(
                fields=["room_id", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="events_unique_idempotency_key",
            )
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.event_type} by {self.actor_id}"


class ClientCommand(models.Model):
    """One accepted command per (binding, clientCommandId): PROTOCOL §8.1.

    A retry with the same canonical payload gets ``result`` back and writes nothing; a different
    payload is ``CLIENT_COMMAND_CONFLICT``. A rejected command never leaves a receipt.
    """

    command_id = models.CharField(max_length=64, primary_key=True)
    source_binding_id = models.CharField(max_length=128)
    client_command_id = models.CharField(max_length=128)
    command_type = models.CharField(max_length=64)
    canonical_hash = models.CharField(max_length=64)
    result = models.JSONField(encoder=StoredJSON)
    accepted_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["source_binding_id", "client_command_id"], name="client_commands_unique_per_binding"
            )
        ]

    def __str__(self) -> str:
        return f"{self.command_type} {self.client_command_id} via {self.source_binding_id}"

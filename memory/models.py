"""Memory, identity, room summaries, resets and the dated-memory rollup state (FEATURES §14, §15, §18).

Records are never edited or erased in place: a supersede writes a new active version and marks the
old one ``superseded``; a retract turns the record into a tombstone (``retracted`` +
``retractedAt``). Memory and identity records have an integer ``id`` as their SQLite rowid so the
external-content FTS5 indexes (migration 0002) can point at them; the public ids are
``memory_id`` / ``identity_id`` (their wire ids).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from rooms.models import ROOM_ID

STATUSES = ("active", "superseded", "retracted")
SCOPE_TYPES = ("room", "agent", "correlation")
AGENT_MEMORY_TYPES = ("core", "dated")
MEMORY_KINDS = ("fact", "decision", "preference", "instruction", "constraint", "note", "summary")
MEMORY_SOURCE_KINDS = ("web", "mcp", "operator", "generated_summary", "automatic_turn", "automatic_rollup")
IDENTITY_KINDS = ("preference", "instruction", "constraint", "note")
IDENTITY_SOURCE_KINDS = ("web", "mcp", "adapter", "operator")


def _choices(values: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(v, v) for v in values]


class MemoryRecord(models.Model):
    id = models.BigAutoField(primary_key=True)  # the FTS5 rowid; never shown
    memory_id = models.CharField(max_length=64, unique=True)
    scope_type = models.CharField(max_length=16, choices=_choices(SCOPE_TYPES))
    scope_id = models.CharField(max_length=256)
    agent_memory_type = models.CharField(max_length=8, choices=_choices(AGENT_MEMORY_TYPES), null=True, blank=True)
    kind = models.CharField(max_length=16, choices=_choices(MEMORY_KINDS))
    author_actor_id = models.CharField(max_length=128)
    subject_actor_id = models.CharField(max_length=128, null=True, blank=True)
    content = models.TextField()
    source_event_id = models.CharField(max_length=64, null=True, blank=True)
    source_kind = models.CharField(max_length=24, choices=_choices(MEMORY_SOURCE_KINDS))
    status = models.CharField(max_length=16, choices=_choices(STATUSES), default="active")
    supersedes_memory_id = models.CharField(max_length=64, null=True, blank=True)
    created_at = models.DateTimeField()
    retracted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["scope_type", "scope_id", "status"], name="memory_scope_status"),
            models.Index(fields=["status", "id"], name="memory_status_id"),
        ]
        constraints = [
            # agentMemoryType exists exactly for agent scope (FEATURES §15.1, §18's trigger).
            models.CheckConstraint(
                condition=(Q(scope_type="agent") & Q(agent_memory_type__in=AGENT_MEMORY_TYPES))
                | (~Q(scope_type="agent") & Q(agent_memory_type__isnull=True)),
                name="memory_agent_type_only_for_agent_scope",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.memory_id} {self.scope_type}:{self.scope_id} ({self.status})"


class IdentityRecord(models.Model):
    id = models.BigAutoField(primary_key=True)  # the FTS5 rowid; never shown
    identity_id = models.CharField(max_length=64, unique=True)
    subject_actor_id = models.CharField(max_length=128)
    author_actor_id = models.CharField(max_length=128)
    kind = models.CharField(max_length=16, choices=_choices(IDENTITY_KINDS))
    content = models.TextField()
    source_event_id = models.CharField(max_length=64, null=True, blank=True)
    source_kind = models.CharField(max_length=16, choices=_choices(IDENTITY_SOURCE_KINDS))
    status = models.CharField(max_length=16, choices=_choices(STATUSES), default="active")
    supersedes_identity_id = models.CharField(max_length=64, null=True, blank=True)
    created_at = models.DateTimeField()
    retracted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["subject_actor_id", "status"], name="identity_subject_status")]

    def __str__(self) -> str:
        return f"{self.identity_id} about {self.subject_actor_id} ({self.status})"


class Summary(models.Model):
    """A cumulative room checkpoint: everything in (from_seq, through_seq] rolled into ``content``."""

    summary_id = models.CharField(max_length=64, primary_key=True)
    room_id = models.CharField(max_length=64, default=ROOM_ID)
    from_seq = models.BigIntegerField()
    through_seq = models.BigIntegerField()
    content = models.TextField()
    generator_actor_id = models.CharField(max_length=128)
    status = models.CharField(max_length=16, choices=_choices(("active", "superseded")), default="active")
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "summaries"
        constraints = [
            # The compare-and-set swap relies on this: at most one active summary per room.
            models.UniqueConstraint(
                fields=["room_id"], condition=Q(status="active"), name="summaries_one_active_per_room"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.summary_id} through #{self.through_seq} ({self.status})"


class ContextReset(models.Model):
    """A context floor: usage, compaction and packets ignore events at or below ``through_seq``."""

    reset_id = models.CharField(max_length=64, primary_key=True)
    room_id = models.CharField(max_length=64, default=ROOM_ID)
    through_seq = models.BigIntegerField()
    reset_native_sessions = models.BooleanField(default=False)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-through_seq"]

    def __str__(self) -> str:
        return f"{self.reset_id} floor #{self.through_seq}"


class DatedMemoryRollup(models.Model):
    """The pending batch and checkpoint of one agent's dated memory for one local date."""

    room_id = models.CharField(max_length=64, default=ROOM_ID)
    actor_id = models.CharField(max_length=128)
    local_date = models.DateField()
    memory_id = models.CharField(max_length=64, null=True, blank=True)  # the day's active record
    summarized_through_seq = models.BigIntegerField(default=0)
    pending_through_seq = models.BigIntegerField(default=0)
    pending_turns = models.IntegerField(default=0)
    pending_chars = models.BigIntegerField(default=0)
    first_pending_at = models.DateTimeField(null=True, blank=True)
    last_pending_at = models.DateTimeField(null=True, blank=True)
    failure_count = models.IntegerField(default=0)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error_code = models.CharField(max_length=64, null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-local_date", "actor_id"]
        constraints = [
            models.UniqueConstraint(fields=["room_id", "actor_id", "local_date"], name="dated_rollup_per_agent_day"),
        ]

    def __str__(self) -> str:
        return f"{self.actor_id} {self.local_date} ({self.pending_turns} pending)"


class DatedMemorySource(models.Model):
    """One completed Turn waiting to be rolled up: ids and counts only, never copied text."""

    turn_id = models.CharField(max_length=64, primary_key=True)
    room_id = models.CharField(max_length=64, default=ROOM_ID)
    actor_id = models.CharField(max_length=128)
    local_date = models.DateField()
    source_event_id = models.CharField(max_length=64)
    source_seq = models.BigIntegerField()
    response_event_id = models.CharField(max_length=64, unique=True)
    response_seq = models.BigIntegerField()
    source_chars = models.IntegerField()
    terminal_at = models.DateTimeField()
    processed_at = models.DateTimeField(null=True, blank=True)
    memory_id = models.CharField(max_length=64, null=True, blank=True)

    class Meta:
        ordering = ["response_seq"]
        indexes = [models.Index(fields=["actor_id", "local_date", "processed_at"], name="dated_source_pending")]

    def __str__(self) -> str:
        return f"{self.turn_id} ({self.actor_id} {self.local_date})"

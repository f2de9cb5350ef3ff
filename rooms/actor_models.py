"""Who is in the room: stable actors, their process instances and their channel bindings, and how far
each agent's context was delivered.

``actorId`` is the stable public identity; an ``AgentInstance`` is one launch of a CLI; a
``SessionBinding`` is the channel that fixes the sender of everything arriving through it (the web
and operator bindings are fixed rows; each agent session gets a fresh, unguessable one).

They live in the lowest app layer because ``memory`` and ``turns`` read them; they still belong to the
``agents`` app (``app_label``) with their tables pinned, so the tables, the migrations' history and the
admin's URLs are those they always had (docs/DECISIONS.md D153). ``agents/models.py`` re-exports them.
"""

from __future__ import annotations

from django.db import models


class Actor(models.Model):
    KINDS = [("user", "user"), ("agent", "agent"), ("system", "system")]

    actor_id = models.CharField(max_length=128, primary_key=True)
    kind = models.CharField(max_length=16, choices=KINDS)
    display_name = models.CharField(max_length=128)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        app_label = "agents"
        db_table = "agents_actor"

    def __str__(self) -> str:
        return self.actor_id


class AgentInstance(models.Model):
    instance_id = models.CharField(max_length=128, primary_key=True)
    actor = models.ForeignKey(Actor, on_delete=models.PROTECT, related_name="instances")
    adapter_id = models.CharField(max_length=64)
    driver = models.CharField(max_length=16, blank=True, default="")
    transport = models.CharField(max_length=16, null=True, blank=True)
    status = models.CharField(max_length=16, default="starting")
    process_started_at = models.DateTimeField(null=True, blank=True)
    process_ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "agents"
        db_table = "agents_agentinstance"

    def __str__(self) -> str:
        return self.instance_id


class SessionBinding(models.Model):
    binding_id = models.CharField(max_length=128, primary_key=True)
    instance = models.ForeignKey(
        AgentInstance, on_delete=models.PROTECT, null=True, blank=True, related_name="bindings"
    )
    actor = models.ForeignKey(Actor, on_delete=models.PROTECT, related_name="bindings")
    transport = models.CharField(max_length=16, null=True, blank=True)  # NULL for web and operator
    native_session_id = models.CharField(max_length=256, null=True, blank=True)
    protocol = models.CharField(max_length=64)
    protocol_version = models.CharField(max_length=32, blank=True, default="")
    status = models.CharField(max_length=16, default="active")  # active | closed
    capabilities = models.JSONField(default=dict)
    cwd = models.CharField(max_length=1024, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    last_ready_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "agents"
        db_table = "agents_sessionbinding"

    def __str__(self) -> str:
        return f"{self.binding_id} ({self.actor_id})"


class DeliveryCursor(models.Model):
    """The highest seq of room context a delivered attempt carried to this agent (not a read receipt)."""

    actor = models.ForeignKey(Actor, on_delete=models.CASCADE)
    room_id = models.CharField(max_length=64)
    last_delivered_seq = models.BigIntegerField(default=0)
    last_summary_seq = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        app_label = "agents"
        db_table = "agents_deliverycursor"
        constraints = [models.UniqueConstraint(fields=["actor", "room_id"], name="delivery_cursor_per_actor_room")]

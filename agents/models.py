"""Who is in the room: stable actors, their process instances and their channel bindings.

``actorId`` is the stable public identity; an ``AgentInstance`` is one launch of a CLI; a
``SessionBinding`` is the channel that fixes the sender of everything arriving through it (the web
and operator bindings are fixed rows; each agent session gets a fresh, unguessable one).
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
        constraints = [models.UniqueConstraint(fields=["actor", "room_id"], name="delivery_cursor_per_actor_room")]


class RuntimeWorker(models.Model):
    """One process that runs, or stands by to run, the room's agents (PROTOCOL §10.6's lease;
    ``agents/lease.py``, docs/DECISIONS.md D45). The row whose ``role`` is ``owner`` holds the lease
    until ``expires_at``: it renews it with a heartbeat and keeps the agents' health beside it, so
    web processes read who owns the room and how its agents are from here. In the embedded default
    the port bind is the lease and the process records itself here as the owner all the same."""

    OWNER, STANDBY, STOPPED = "owner", "standby", "stopped"
    ROLES = [(OWNER, OWNER), (STANDBY, STANDBY), (STOPPED, STOPPED)]

    worker_id = models.CharField(max_length=128, primary_key=True)
    mode = models.CharField(max_length=16)  # embedded | worker
    host = models.CharField(max_length=255)
    pid = models.IntegerField()
    role = models.CharField(max_length=16, choices=ROLES)
    started_at = models.DateTimeField()
    acquired_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    agents_health = models.JSONField(default=dict)  # actorId -> agents/health.py's entry (the owner's)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["role"], condition=models.Q(role="owner"), name="one_owner_of_the_agents")
        ]

    def __str__(self) -> str:
        return f"{self.worker_id} ({self.role})"


class AgentLease(models.Model):
    """Which worker runs one agent (``agents/agent_leases.py``, docs/DECISIONS.md
    D58). The lease has no clock of its own: it is held while its holder's ``RuntimeWorker`` row is
    live (renewed by that row's heartbeat, not stopped, not expired, its pid alive on this host).
    ``worker_id`` is empty when nobody ever held it or its holder let it go."""

    actor_id = models.CharField(max_length=128, primary_key=True)
    worker_id = models.CharField(max_length=128, blank=True, default="")
    acquired_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.actor_id} -> {self.worker_id or 'nobody'}"

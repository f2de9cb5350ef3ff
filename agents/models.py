"""The agents app's models: the runtime's workers and leases here, and who is in the room (actors,
instances, bindings, delivery cursors), defined in ``rooms/actor_models.py`` because memory and
turns read them (D153).
"""

from __future__ import annotations

from django.db import models

# Read by memory and turns too, so defined below them; still this app's models (D153).
from rooms.actor_models import Actor, AgentInstance, DeliveryCursor, SessionBinding

__all__ = ["Actor", "AgentInstance", "AgentLease", "DeliveryCursor", "RuntimeWorker", "SessionBinding"]


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

"""Which worker runs each agent: the per-agent lease rows (``agents.models.AgentLease``;
docs/DECISIONS.md D58).

An agent's lease has no clock of its own. It names its holder's ``RuntimeWorker`` row, and is held
while that row is live: renewed by its heartbeat (``agents/lease.py``), not stopped, not expired,
and, on this host, its pid alive. A worker takes an agent whose lease has no live holder; when it
takes it from a holder that is not stopped yet (expired, or its pid gone), it marks that holder
``stopped`` in the same transaction, so a stalled holder that wakes finds its row stopped and
stops everything it ran (``agents/lease_keeper.py``) instead of running an agent twice.

Taking is one conditional ``UPDATE ... WHERE actor_id = x AND worker_id = <the holder we saw>``:
of two workers that saw the same dead holder, one updates the row and the other updates none
(PostgreSQL re-checks the condition after the first commits), so an agent never has two holders.

Every function here runs inside the caller's transaction on the writer thread (``db.write``),
except ``holders``, a read for health.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from agents.models import AgentLease, RuntimeWorker


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def is_gone(worker: RuntimeWorker, now: datetime, host: str) -> bool:
    """The worker's leases mean nothing any more: it stopped, its lease expired, or it ran on this
    host and its pid is gone (a SIGKILLed worker needs no expiry wait)."""
    if worker.role == RuntimeWorker.STOPPED or worker.expires_at <= now:
        return True
    return worker.host == host and not _pid_alive(worker.pid)


def acquire(worker_id: str, host: str, wanted: Iterable[str], now: datetime) -> list[str]:
    """Take each agent of ``wanted`` that no live worker holds; returns the ones taken now (those
    already ours are not listed)."""
    wanted = list(wanted)
    AgentLease.objects.bulk_create([AgentLease(actor_id=actor_id) for actor_id in wanted], ignore_conflicts=True)
    rows = list(AgentLease.objects.filter(actor_id__in=wanted).exclude(worker_id=worker_id))
    holders = RuntimeWorker.objects.in_bulk({row.worker_id for row in rows if row.worker_id})
    taken = []
    for row in rows:
        holder = holders.get(row.worker_id)
        if holder is not None and not is_gone(holder, now, host):
            continue
        if not AgentLease.objects.filter(actor_id=row.actor_id, worker_id=row.worker_id).update(
            worker_id=worker_id, acquired_at=now
        ):
            continue  # another worker took it first
        taken.append(row.actor_id)
        if holder is not None and holder.role != RuntimeWorker.STOPPED:
            RuntimeWorker.objects.filter(worker_id=holder.worker_id).update(role=RuntimeWorker.STOPPED)
    return sorted(taken)


def claim_all(worker_id: str, actor_ids: Iterable[str], now: datetime) -> None:
    """The embedded default: the bound port is the lease of every agent."""
    actor_ids = list(actor_ids)
    AgentLease.objects.bulk_create([AgentLease(actor_id=actor_id) for actor_id in actor_ids], ignore_conflicts=True)
    AgentLease.objects.filter(actor_id__in=actor_ids).exclude(worker_id=worker_id).update(
        worker_id=worker_id, acquired_at=now
    )


def held_by(worker_id: str) -> frozenset[str]:
    return frozenset(AgentLease.objects.filter(worker_id=worker_id).values_list("actor_id", flat=True))


def release(worker_id: str) -> None:
    """A clean stop: our agents are free for any worker at its next try."""
    AgentLease.objects.filter(worker_id=worker_id).update(worker_id="")


def holders(live_worker_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Each agent held by a live worker (of ``live_worker_ids``): actorId -> {workerId, since}."""
    live = set(live_worker_ids)
    return {
        row.actor_id: {"workerId": row.worker_id, "since": row.acquired_at}
        for row in AgentLease.objects.filter(worker_id__in=live)
    }

"""Who owns the room's agents: the lease rows (``agents.models.RuntimeWorker``; PROTOCOL §10.6,
docs/DECISIONS.md D45).

One process at a time runs the agents. In the embedded default the port bind decides it and the
process records itself as the owner (``claim``). A split-mode worker (``manage.py runworker
groupx-agents``) must ``acquire`` the lease: it gets it when no owner is live (none, expired, or
on this host with its pid gone), else it is a standby and tries again. The owner renews the lease
with ``heartbeat``; a heartbeat that finds another owner (it took the lease after ours expired)
says the lease is lost, and that process stops its agents at once (``agents/lease_keeper.py``).

Every function here is one transaction on the writer thread (``db.write``), except ``describe``,
a read for health and ``groupx doctor``.
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from agents.models import RuntimeWorker

# Defaults: a heartbeat every 2 s, and a lease that outlives three missed heartbeats. The tests
# shorten both (their standby takes over within their deadlines): GROUPX_LEASE_HEARTBEAT_MS and
# GROUPX_LEASE_EXPIRY_MS.
HEARTBEAT_SECONDS = 2.0
EXPIRY_SECONDS = 10.0
# A stopped or long-dead row is kept this long for `groupx doctor` and health, then swept.
FORGET_AFTER = timedelta(minutes=10)
NO_OWNER_MESSAGE = "no worker owns the room: queued Turns wait until `manage.py runworker groupx-agents` runs"


def heartbeat_seconds() -> float:
    return int(os.environ.get("GROUPX_LEASE_HEARTBEAT_MS", HEARTBEAT_SECONDS * 1000)) / 1000


def expiry_seconds() -> float:
    return int(os.environ.get("GROUPX_LEASE_EXPIRY_MS", EXPIRY_SECONDS * 1000)) / 1000


@dataclass(frozen=True)
class Me:
    """This process, as the lease rows know it."""

    worker_id: str
    mode: str  # embedded | worker
    host: str
    pid: int

    @classmethod
    def here(cls, mode: str) -> Me:
        host, pid = socket.gethostname(), os.getpid()
        return cls(worker_id=f"{mode}:{host}:{pid}:{secrets.token_hex(4)}", mode=mode, host=host, pid=pid)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def _owner_is_gone(owner: RuntimeWorker, now: datetime, host: str) -> bool:
    if owner.expires_at <= now:
        return True
    # On this host a dead pid needs no expiry: the owner was killed, its lease means nothing.
    return owner.host == host and not _pid_alive(owner.pid)


def _upsert(me: Me, now: datetime, *, role: str, **fields: Any) -> None:
    expires = now + timedelta(seconds=expiry_seconds())
    updated = RuntimeWorker.objects.filter(worker_id=me.worker_id).update(
        role=role, heartbeat_at=now, expires_at=expires, **fields)
    if not updated:
        RuntimeWorker.objects.create(worker_id=me.worker_id, mode=me.mode, host=me.host, pid=me.pid, role=role,
                                     started_at=now, heartbeat_at=now, expires_at=expires, **fields)


def _sweep(now: datetime) -> None:
    RuntimeWorker.objects.exclude(role=RuntimeWorker.OWNER).filter(expires_at__lt=now - FORGET_AFTER).delete()


def acquire(me: Me) -> dict[str, Any] | None:
    """Take the lease if no owner is live, else stand by. Returns the owner we replaced (its
    ``worker_id`` and ``host``/``pid``; empty when there was none) when we took it, None when we
    stand by."""
    now = timezone.now()
    with transaction.atomic():
        owner = RuntimeWorker.objects.filter(role=RuntimeWorker.OWNER).first()
        if owner is not None and owner.worker_id != me.worker_id and not _owner_is_gone(owner, now, me.host):
            _upsert(me, now, role=RuntimeWorker.STANDBY)
            return None
        replaced: dict[str, Any] = {}
        if owner is not None and owner.worker_id != me.worker_id:
            replaced = {"workerId": owner.worker_id, "host": owner.host, "pid": owner.pid}
            RuntimeWorker.objects.filter(worker_id=owner.worker_id).update(role=RuntimeWorker.STOPPED)
        _upsert(me, now, role=RuntimeWorker.OWNER, acquired_at=now)
        _sweep(now)
    return replaced


def claim(me: Me) -> None:
    """The embedded default: this process holds the port, which is the lease; record it as the
    owner whatever the rows say (an owner row left by a killed process is history)."""
    now = timezone.now()
    with transaction.atomic():
        RuntimeWorker.objects.filter(role=RuntimeWorker.OWNER).exclude(worker_id=me.worker_id).update(
            role=RuntimeWorker.STOPPED)
        _upsert(me, now, role=RuntimeWorker.OWNER, acquired_at=now)
        _sweep(now)


def heartbeat(me: Me, agents_health: dict[str, Any] | None = None) -> bool:
    """Renew our lease (and store the agents' health when given). False: the lease is no longer
    ours (another process took it after ours expired)."""
    now = timezone.now()
    fields: dict[str, Any] = {"heartbeat_at": now, "expires_at": now + timedelta(seconds=expiry_seconds())}
    if agents_health is not None:
        fields["agents_health"] = agents_health
    return bool(RuntimeWorker.objects.filter(worker_id=me.worker_id, role=RuntimeWorker.OWNER).update(**fields))


def release(me: Me) -> None:
    """A clean stop: the lease ends now, so a standby takes over at its next try."""
    now = timezone.now()
    RuntimeWorker.objects.filter(worker_id=me.worker_id).update(role=RuntimeWorker.STOPPED, expires_at=now)


def _public(row: RuntimeWorker) -> dict[str, Any]:
    return {"workerId": row.worker_id, "mode": row.mode, "host": row.host, "pid": row.pid,
            "since": _iso(row.acquired_at or row.started_at), "heartbeatAt": _iso(row.heartbeat_at),
            "expiresAt": _iso(row.expires_at)}


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat(timespec="milliseconds") if moment else None


def describe() -> dict[str, Any]:
    """Who owns the room's agents, for health and doctor: ``owner`` (null with no live owner, and
    then ``message`` says so), the live ``standbys``, and the owner's ``agentsHealth``."""
    now = timezone.now()
    rows = list(RuntimeWorker.objects.exclude(role=RuntimeWorker.STOPPED).filter(expires_at__gt=now))
    owner = next((row for row in rows if row.role == RuntimeWorker.OWNER), None)
    report: dict[str, Any] = {
        "owner": _public(owner) if owner else None,
        "standbys": [_public(row) for row in rows if row.role == RuntimeWorker.STANDBY],
        "agentsHealth": owner.agents_health if owner else {},
    }
    if owner is None:
        report["message"] = NO_OWNER_MESSAGE
    return report

"""Who runs the room: the worker rows (``agents.models.RuntimeWorker``; PROTOCOL §10.6,
docs/DECISIONS.md D45, D58).

Each process that runs agents has a row, renewed by its heartbeat. The row whose role is ``owner``
holds the room's lease: the room-wide jobs (restart recovery of what no agent lease covers,
dated-memory scheduling, the room assistant). Each agent has a lease of its own
(``agents/agent_leases.py``), held while its holder's row is live. In the embedded default the
port bind decides everything and the process records itself as the owner of the room and of every
agent (``claim``, renewed by ``heartbeat``). A split-mode worker (``manage.py runworker
groupx-agents [--agents ...]``) ``beat``s: it renews its row, takes the room's lease when no owner
is live (none, expired, or on this host with its pid gone; else its row is a ``standby``) and each
agent it wants that no live worker holds. A beat that finds our row stopped (another worker took
our leases after ours expired) says everything is lost, and that process stops its agents at once
(``agents/lease_keeper.py``).

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

from django.db import IntegrityError, transaction
from django.utils import timezone

from agents import agent_leases
from agents.agent_leases import is_gone
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


def _upsert(me: Me, now: datetime, *, role: str, **fields: Any) -> None:
    expires = now + timedelta(seconds=expiry_seconds())
    updated = RuntimeWorker.objects.filter(worker_id=me.worker_id).update(
        role=role, heartbeat_at=now, expires_at=expires, **fields
    )
    if not updated:
        RuntimeWorker.objects.create(
            worker_id=me.worker_id,
            mode=me.mode,
            host=me.host,
            pid=me.pid,
            role=role,
            started_at=now,
            heartbeat_at=now,
            expires_at=expires,
            **fields,
        )


def _sweep(now: datetime) -> None:
    RuntimeWorker.objects.exclude(role=RuntimeWorker.OWNER).filter(expires_at__lt=now - FORGET_AFTER).delete()


def _acquire_room(me: Me, now: datetime) -> dict[str, Any] | None:
    """Take the room's lease if no owner is live, else stand by (our row renewed either way).
    Returns the owner we replaced (``workerId``, ``host``, ``pid``; empty when there was none, or
    when it was us already), None when we stand by."""
    owner = RuntimeWorker.objects.filter(role=RuntimeWorker.OWNER).first()
    if owner is not None and owner.worker_id != me.worker_id and not is_gone(owner, now, me.host):
        _upsert(me, now, role=RuntimeWorker.STANDBY)
        return None
    replaced: dict[str, Any] = {}
    if owner is not None and owner.worker_id != me.worker_id:
        replaced = {"workerId": owner.worker_id, "host": owner.host, "pid": owner.pid}
        RuntimeWorker.objects.filter(worker_id=owner.worker_id).update(role=RuntimeWorker.STOPPED)
    if owner is not None and owner.worker_id == me.worker_id:
        _upsert(me, now, role=RuntimeWorker.OWNER)
    else:
        _upsert(me, now, role=RuntimeWorker.OWNER, acquired_at=now)
    return replaced


@dataclass(frozen=True)
class Holdings:
    """What a worker holds after a ``beat``. ``alive`` False: our row was stopped, so another
    worker took our leases (we stalled past our expiry): everything we run must stop."""

    alive: bool
    room: bool = False
    agents: frozenset[str] = frozenset()
    replaced: dict[str, Any] | None = None  # the room's owner we replaced at this beat


def beat(me: Me, wanted: list[str], agents_health: dict[str, Any] | None = None) -> Holdings:
    """A worker's heartbeat and its tries, in one transaction: renew our row, take the room's
    lease if no owner is live, take each agent of ``wanted`` that no live worker holds (D58), and
    store our agents' health when given."""
    now = timezone.now()
    with transaction.atomic():
        mine = RuntimeWorker.objects.filter(worker_id=me.worker_id).first()
        if mine is not None and mine.role == RuntimeWorker.STOPPED:
            return Holdings(alive=False)
        try:
            with transaction.atomic():  # a savepoint: PostgreSQL aborts the transaction on a failed statement
                replaced = _acquire_room(me, now)
        except IntegrityError:  # another worker became the owner between our read and our write
            _upsert(me, now, role=RuntimeWorker.STANDBY)
            replaced = None
        agent_leases.acquire(me.worker_id, me.host, wanted, now)
        if agents_health is not None:
            RuntimeWorker.objects.filter(worker_id=me.worker_id).update(agents_health=agents_health)
        _sweep(now)
        return Holdings(
            alive=True, room=replaced is not None, agents=agent_leases.held_by(me.worker_id), replaced=replaced
        )


def claim(me: Me, actor_ids: list[str]) -> None:
    """The embedded default: this process holds the port, which is the lease of the room and of
    every agent; record it as their owner whatever the rows say (an owner row left by a killed
    process is history)."""
    now = timezone.now()
    with transaction.atomic():
        RuntimeWorker.objects.filter(role=RuntimeWorker.OWNER).exclude(worker_id=me.worker_id).update(
            role=RuntimeWorker.STOPPED
        )
        _upsert(me, now, role=RuntimeWorker.OWNER, acquired_at=now)
        agent_leases.claim_all(me.worker_id, actor_ids, now)
        _sweep(now)


def heartbeat(me: Me, agents_health: dict[str, Any] | None = None) -> bool:
    """Renew our row (and store the agents' health when given): the embedded default's heartbeat,
    and a worker's between its full beats. False: our leases are no longer ours (another process
    took them after ours expired)."""
    now = timezone.now()
    fields: dict[str, Any] = {"heartbeat_at": now, "expires_at": now + timedelta(seconds=expiry_seconds())}
    if agents_health is not None:
        fields["agents_health"] = agents_health
    # Not stopped: an owner stays one until another process stops it (a worker's row may be a
    # standby that runs agents, D58); a stopped row means our leases were taken.
    return bool(
        RuntimeWorker.objects.filter(worker_id=me.worker_id).exclude(role=RuntimeWorker.STOPPED).update(**fields)
    )


def release(me: Me) -> None:
    """A clean stop: the lease ends now, so a standby takes over at its next try."""
    now = timezone.now()
    with transaction.atomic():
        RuntimeWorker.objects.filter(worker_id=me.worker_id).update(role=RuntimeWorker.STOPPED, expires_at=now)
        agent_leases.release(me.worker_id)


def _public(row: RuntimeWorker) -> dict[str, Any]:
    return {
        "workerId": row.worker_id,
        "mode": row.mode,
        "host": row.host,
        "pid": row.pid,
        "since": _iso(row.acquired_at or row.started_at),
        "heartbeatAt": _iso(row.heartbeat_at),
        "expiresAt": _iso(row.expires_at),
    }


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat(timespec="milliseconds") if moment else None


def describe() -> dict[str, Any]:
    """Who runs what, for health and doctor: ``owner`` (the room's lease; null with no live owner,
    and then ``message`` says so), the live ``standbys`` (workers without the room's lease, which
    may run agents, D58), ``workers`` (every live one, with the ``agents`` it runs and whether it
    runs the room-wide jobs), ``agentWorkers`` (actorId -> the live worker that runs it) and
    ``agentsHealth``: each agent's health from the row of the worker that runs it, and the owner's
    other entries (the room assistant's status, D55)."""
    now = timezone.now()
    host = socket.gethostname()
    rows = [
        row
        for row in RuntimeWorker.objects.exclude(role=RuntimeWorker.STOPPED).filter(expires_at__gt=now)
        if not is_gone(row, now, host)
    ]
    by_id = {row.worker_id: row for row in rows}
    owner = next((row for row in rows if row.role == RuntimeWorker.OWNER), None)
    holders = agent_leases.holders(by_id)
    held: dict[str, list[str]] = {}
    for actor_id, holder in sorted(holders.items()):
        held.setdefault(holder["workerId"], []).append(actor_id)
    health = {key: value for key, value in (owner.agents_health if owner else {}).items() if key not in holders}
    for actor_id, holder in holders.items():
        entry = by_id[holder["workerId"]].agents_health.get(actor_id)
        if entry is not None:
            health[actor_id] = entry

    def public(row: RuntimeWorker) -> dict[str, Any]:
        return {**_public(row), "agents": held.get(row.worker_id, []), "roomJobs": row.role == RuntimeWorker.OWNER}

    report: dict[str, Any] = {
        "owner": public(owner) if owner else None,
        "standbys": [public(row) for row in rows if row.role == RuntimeWorker.STANDBY],
        "workers": [public(row) for row in rows],
        "agentWorkers": {actor_id: holder["workerId"] for actor_id, holder in sorted(holders.items())},
        "agentsHealth": health,
    }
    if owner is None:
        report["message"] = NO_OWNER_MESSAGE
    return report

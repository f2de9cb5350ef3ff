"""The room-wide failures no single job owns, kept public as ``system.error`` (PROTOCOL §14,
docs/DECISIONS.md D89): a process that serves the room (the embedded default, or a web process of
split mode) looks every heartbeat at what health would say and writes an event only when a
condition begins or heals:

- ``store.integrity``: the last integrity check found damage (``STORE_UNAVAILABLE``);
- ``worker.none``: split mode, and no live worker owns the room (``SESSION_NOT_AVAILABLE``);
- ``worker.agent:<actorId>``: split mode, a worker owns the room but none runs this agent;
- ``lease.lost:<workerId>``: written by the process that lost the lease
  (``groupx_site/process_runtime.py``); healed here once a live process owns the room again.

A worker condition is reported once it has held for a lease's expiry (a split room's worker
starts after its web process, and a standby takes over within that time). What it saw last is
kept here, so an unchanged room costs one read of the lease rows (and of the
few ``system.error`` rows) per beat and no write; several web processes may each notice a change, and ``rooms/system_errors.py`` writes it
once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from django.conf import settings

from agents import lease
from groupx_site.core import process_state
from groupx_site.core.background import BackgroundTask
from groupx_site.store import db, store_integrity
from groupx_site.store.store_faults import StoreUnavailable
from rooms import system_errors
from setup_wizard import roster

logger = logging.getLogger("groupx.conditions")

_seen: dict[str, bool] = {}  # condition -> active, as this process last wrote or confirmed it


def wanted(worker: dict[str, Any] | None, integrity_ok: bool | None) -> dict[str, tuple[str, str] | None]:
    """Each watched condition: ``(code, message)`` while it holds, None once it healed."""
    conditions: dict[str, tuple[str, str] | None] = {}
    if integrity_ok is not None:
        conditions["store.integrity"] = (
            None
            if integrity_ok
            else (
                "STORE_UNAVAILABLE",
                "The room's database file is damaged (the integrity check failed); "
                "back it up and see /api/health?integrity=check.",
            )
        )
    if worker is None or settings.GROUPX_CONFIG.channelLayer is None:  # split mode only
        return conditions
    owner = worker.get("owner")
    conditions["worker.none"] = (
        None
        if owner
        else (
            "SESSION_NOT_AVAILABLE",
            "No worker runs the room's agents: their Turns wait until one starts (manage.py runworker groupx-agents).",
        )
    )
    holders = worker.get("agentWorkers") or {}
    for agent in roster.live_agents():
        unrun = owner is not None and agent.actor_id not in holders
        conditions[f"worker.agent:{agent.actor_id}"] = (
            ("SESSION_NOT_AVAILABLE", f"No live worker runs {agent.display_name}: its Turns wait until one takes it.")
            if unrun
            else None
        )
    return conditions


def apply(conditions: dict[str, tuple[str, str] | None], owner: dict[str, Any] | None, lost_leases: list[str]) -> None:
    """On the writer: write what changed since this process last looked, and heal the lost leases
    once a live process owns the room."""
    for condition, failing in conditions.items():
        if _seen.get(condition) == (failing is not None):
            continue
        if failing is None:
            system_errors.resolve(condition, "Healed: " + _healed(condition))
        else:
            system_errors.report(condition, *failing, actor_id=_actor_of(condition))
        _seen[condition] = failing is not None
    for condition in lost_leases:
        system_errors.resolve(
            condition, f"GroupX process {owner['pid']} on {owner['host']} runs the room's agents now."
        )


def _healed(condition: str) -> str:
    if condition == "store.integrity":
        return "the integrity check finds the database file sound."
    if condition == "worker.none":
        return "a worker runs the room's agents again."
    return "a worker runs this agent again."


def _actor_of(condition: str) -> str | None:
    return condition.removeprefix("worker.agent:") if condition.startswith("worker.agent:") else None


def _look() -> tuple[dict[str, tuple[str, str] | None], dict[str, Any] | None, list[str]]:
    """On a reader: the conditions as the store and this process see them now, the room's live
    owner, and the lost leases still open (healed by that owner's presence)."""
    integrity = store_integrity.last()
    worker = lease.describe()
    owner = worker.get("owner")
    lost = system_errors.active_conditions("lease.lost:") if owner is not None else []
    return wanted(worker, integrity.ok if integrity is not None else None), owner, lost


_failing_since: dict[str, float] = {}  # a worker condition -> when this process first saw it hold


def _after_grace(conditions: dict[str, tuple[str, str] | None]) -> dict[str, tuple[str, str] | None]:
    """A worker condition counts once it has held for a lease's expiry: a split room's web process
    is ready before its worker starts (``groupx start --split``), and a standby takes over within
    that time; neither is a failure the person must hear about."""
    now, grace = time.monotonic(), lease.expiry_seconds()
    kept: dict[str, tuple[str, str] | None] = {}
    for condition, failing in conditions.items():
        if failing is None or not condition.startswith("worker."):
            _failing_since.pop(condition, None)
            kept[condition] = failing
            continue
        since = _failing_since.setdefault(condition, now)
        kept[condition] = failing if now - since >= grace else None
    return kept


async def _watch() -> None:
    while True:
        if process_state.readiness() == "ready":
            try:
                conditions, owner, lost = await db.read(_look)()
                conditions = _after_grace(conditions)
                if lost or any(_seen.get(c) != (failing is not None) for c, failing in conditions.items()):
                    await db.write(apply)(conditions, owner, lost)
            except StoreUnavailable as fault:  # the store's own fault is health's to report (D24)
                logger.info("room conditions not checked: %s", fault.message)
            except Exception:
                logger.exception("checking the room's conditions failed; trying again at the next beat")
        await asyncio.sleep(lease.heartbeat_seconds())


watcher = BackgroundTask("room-conditions", _watch)

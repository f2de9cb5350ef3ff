"""``GET /api/health`` (PROTOCOL §10.6, FEATURES §16)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection

from agents import health, lease
from groupx_site import process_runtime, runtime_identity
from groupx_site.core import process_state
from groupx_site.speedups import switches as speedups_switches
from groupx_site.store import store_integrity, store_probe
from setup_wizard import roster
from turns.models import Turn
from turns.states import IN_FLIGHT_STATUSES, QUEUED


def identity_fields() -> dict[str, str]:
    return {
        "service": runtime_identity.SERVICE,
        "protocol": runtime_identity.PROTOCOL,
        "version": runtime_identity.product_version(),
        "runtimeKey": runtime_identity.runtime_key(settings.GROUPX_CONFIG, settings.GROUPX_CONFIG_PATH),
        "runtimeScopeKey": runtime_identity.runtime_scope_key(settings.GROUPX_CONFIG_PATH),
    }


def store_status(*, suspect: bool, check_integrity: bool = False) -> dict[str, Any]:
    """``available`` means the store takes writes now: a full or read-only store still reads, so
    the last write fault and a bounded write probe decide (``groupx_site/store/store_probe.py``).
    ``integrityOk`` is the last ``quick_check`` (at start, or now with ``check_integrity``; null
    before the first one ends) and ``schemaVersion`` the version the database records (D42)."""
    fault = store_probe.check(suspect=suspect)
    integrity = (store_integrity.check() if check_integrity else None) or store_integrity.last()
    store: dict[str, Any] = {"available": fault is None, "integrityOk": None, "schemaVersion": None}
    if integrity is not None:
        store.update(integrity.as_json())
    try:
        with connection.cursor() as cursor:
            # PostgreSQL always writes ahead to its WAL: "wal" there too (docs/DECISIONS.md D53).
            store["journalMode"] = (
                cursor.execute("PRAGMA journal_mode").fetchone()[0] if connection.vendor == "sqlite" else "wal"
            )
            store["schemaVersion"] = store_integrity.recorded_schema_version(cursor)
    except Exception:  # a broken store is reported, never raised at the health endpoint
        store["available"] = False
    if fault is not None:
        store.update(fault.as_json())
    return store


def worker_report() -> dict[str, Any]:
    """Who runs what (``agents/lease.py``): the mode, the owner of the room's lease and since when,
    the live standbys, and every live worker with the agents it runs and whether it runs the
    room-wide jobs (``workers``, D58); with no live owner, ``owner`` is null and ``message`` says so
    (D45)."""
    report = lease.describe()
    report["mode"] = "split" if process_runtime.split_mode() else "embedded"
    return report


def agent_states(worker: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Each live agent's health. A process that runs the agents knows it; a web process of split
    mode reads what the owning worker stored beside its lease (``stopped`` with no live owner), from
    ``worker`` (``worker_report()``; None while the store cannot say)."""
    agents = roster.live_agents()
    if process_runtime.runs_agents():
        return {agent.actor_id: health.snapshot(agent.actor_id) for agent in agents}
    if worker is None:  # the lease rows cannot be read yet (a fresh room migrating): nothing runs them
        return {
            agent.actor_id: {"status": "starting" if process_state.readiness() == "starting" else "stopped"}
            for agent in agents
        }
    stored = worker["agentsHealth"]
    return {agent.actor_id: dict(stored.get(agent.actor_id) or {"status": "stopped"}) for agent in agents}


def current_agent_states() -> dict[str, dict[str, Any]]:
    """``agent_states`` once the store is migrated (the bootstrap's cards)."""
    return agent_states(None if process_runtime.runs_agents() else worker_report())


def agent_health(worker: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Each live agent's entry; ``worker`` names the worker that runs it (its lease's live holder,
    D58), null when none does or the store does not say."""
    entries = []
    states = agent_states(worker)
    holders = (worker or {}).get("agentWorkers") or {}
    for agent in roster.live_agents():
        state = states[agent.actor_id]
        entries.append(
            {
                "actorId": agent.actor_id,
                "agentId": agent.agent_id,
                "adapterId": agent.driver,
                "driver": agent.driver,
                "host": agent.host,
                **state,
                "worker": holders.get(agent.actor_id),
            }
        )
    return entries


def _worker_or_none(store: dict[str, Any]) -> dict[str, Any] | None:
    if "journalMode" not in store:
        return None  # the store does not answer: health says so, not who owns the agents
    try:
        return worker_report()
    except Exception:  # noqa: BLE001 - before the migrations, or a broken store: health still answers
        return None


def _public_worker(worker: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in worker.items() if key not in ("agentsHealth", "agentWorkers")}


def health_report(*, check_integrity: bool = False) -> tuple[int, dict[str, Any]]:
    """The health body (its shape is documented in docs/DECISIONS.md D42). ``check_integrity``:
    run the integrity check now instead of reporting the last one."""
    readiness = process_state.readiness()
    if readiness == "closing":
        return 503, {"status": "closing", "readiness": readiness, **identity_fields()}
    store = store_status(suspect=readiness != "ready", check_integrity=check_integrity)
    worker = _worker_or_none(store)
    agents = agent_health(worker)
    start_retry = process_state.start_retry()
    # No owner of the room, or (split mode) an agent no live worker runs: its Turns wait (D45, D58).
    no_owner = (
        readiness == "ready"
        and worker is not None
        and (worker["owner"] is None or (worker["mode"] == "split" and any(a["worker"] is None for a in agents)))
    )
    superseded = process_state.superseded()  # another instance took the room over (D90)
    degraded = (
        not store["available"]
        or store["integrityOk"] is False
        or start_retry is not None
        or no_owner
        or superseded is not None
        or any(a["status"] in ("failed", "degraded", "native_policy_blocked") for a in agents)
    )
    counts = {"activeTurns": 0, "queuedTurns": 0}
    if readiness == "ready" and "journalMode" in store:  # while starting, the tables may still be migrating
        counts = {
            "activeTurns": Turn.objects.filter(status__in=IN_FLIGHT_STATUSES).count(),
            "queuedTurns": Turn.objects.filter(status=QUEUED).count(),
        }
    return 200, {
        "status": "degraded" if degraded else "ok",
        "readiness": readiness,
        **identity_fields(),
        "transport": "structured",
        "transportLifecycle": "active",
        "access": "unrestricted",
        "store": store,
        "agents": agents,
        "speedups": speedups_switches.active(),  # the speed seam's mechanisms as this process runs them
        **({"worker": _public_worker(worker)} if worker is not None else {}),
        **counts,
        **(start_retry or {}),
        **({"superseded": superseded} if superseded is not None else {}),
    }

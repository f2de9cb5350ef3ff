"""``groupx doctor``'s lines on who runs the room's agents (docs/DECISIONS.md D45): the owner of the
lease and since when, a second worker standing by, or nobody. Read straight from the lease rows of
the room's SQLite file (or its PostgreSQL database, ``storage.url``, D53), read-only, so it answers
whether or not a web process runs."""

from __future__ import annotations

import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from setup_wizard.config import ConfigError, load_config, storage_path

TABLE = "agents_runtimeworker"  # agents.models.RuntimeWorker


def _moment(value: str | datetime) -> datetime:
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)  # Django stores UTC


def worker_lines(config_path: Path) -> list[str]:
    try:
        config = load_config(config_path) if config_path.exists() else None
    except ConfigError:
        return []  # the config lines above already say why
    if config is None:
        return []
    split = config.channelLayer is not None
    if config.storage.url:
        try:
            rows, leases = _postgresql_rows(config.storage.url)
        except Exception as error:  # noqa: BLE001 - psycopg's errors: doctor reports, never raises
            return [f"agents' worker: unknown (the lease could not be read: {error})"]
        return _lines(rows, split, leases)
    database = Path(os.environ.get("GROUPX_DB") or storage_path(config, config_path))  # as settings.py
    if not database.exists():
        return ["agents' worker: none yet (the room's database does not exist)"]
    try:
        connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=2)
        try:
            rows = connection.execute(SELECT).fetchall()
            has_leases = connection.execute("SELECT 1 FROM sqlite_master WHERE name = 'agents_agentlease'").fetchone()
            leases = connection.execute(SELECT_AGENTS).fetchall() if has_leases else []  # a room not yet migrated
        finally:
            connection.close()
    except sqlite3.Error as error:
        return [f"agents' worker: unknown (the lease could not be read: {error})"]
    return _lines(rows, split, leases)


SELECT_AGENTS = "SELECT actor_id, worker_id FROM agents_agentlease WHERE worker_id != ''"  # agents.models.AgentLease
SELECT = (
    f"SELECT worker_id, mode, host, pid, role, acquired_at, heartbeat_at, expires_at FROM {TABLE}"
    " WHERE role != 'stopped'"
)


def _postgresql_rows(url: str) -> tuple[list[tuple], list[tuple]]:
    import psycopg

    with psycopg.connect(url, connect_timeout=2, options="-c default_transaction_read_only=on") as connection:
        return connection.execute(SELECT).fetchall(), connection.execute(SELECT_AGENTS).fetchall()


def _lines(rows: list[tuple], split: bool, leases: list[tuple]) -> list[str]:
    now = datetime.now(UTC)
    live = [row for row in rows if _moment(row[7]) > now]
    owners = [row for row in live if row[4] == "owner"]
    standbys = [row for row in live if row[4] == "standby"]
    lines = []
    if owners:
        worker_id, mode, host, pid, _, acquired, heartbeat, _ = owners[0]
        lines.append(
            f"agents' worker: {worker_id} ({mode}, host {host}, pid {pid}) owns the room since {acquired}"
            f" (last heartbeat {heartbeat})"
        )
    elif split:
        lines.append(
            "agents' worker: NONE owns the room: queued Turns wait; run `python manage.py runworker "
            "groupx-agents` (groupx.json names a Redis channel layer: split mode)"
        )
    else:
        lines.append("agents' worker: none (GroupX is not running; `groupx start` runs web and agents in one process)")
    runs: dict[str, list[str]] = {}
    for actor_id, worker_id in sorted(leases):
        runs.setdefault(worker_id, []).append(actor_id)
    for worker_id, _mode, host, pid, *_ in standbys:
        if worker_id in runs:  # a worker of --agents without the room's lease (D58)
            lines.append(f"  a worker runs agents: {worker_id} (host {host}, pid {pid})")
        else:
            lines.append(
                f"  a second worker stands by: {worker_id} (host {host}, pid {pid}); it takes over when the"
                " owner's lease expires"
            )
    if len(runs) > 1 or standbys:  # several workers: say who runs each agent
        for row in live:
            agents = runs.get(row[0])
            if agents:
                room = " and the room-wide jobs" if row[4] == "owner" else ""
                lines.append(f"  {row[0]} runs {', '.join(agents)}{room}")
    return lines

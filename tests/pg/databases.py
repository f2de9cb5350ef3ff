"""A PostgreSQL database per test room, when the run has a cluster (``GROUPX_TEST_PG_URL``, set by
``python -m tests.pg.cluster``; ``make test-pg``). Without it every room stays on SQLite.

``tests/server.py`` writes the room's URL into its ``groupx.json``. The processes of one room (the
split tier's web processes and workers) share its folder, hence its database. The migrations run
once per test process into a template that each room's database copies (``CREATE DATABASE …
TEMPLATE``), as the SQLite rooms copy a migrated file.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg

REPO = Path(__file__).resolve().parents[2]
_template: str | None = None


def cluster_url() -> str | None:
    return os.environ.get("GROUPX_TEST_PG_URL") or None


def url_of(cluster: str, database: str) -> str:
    return f"{cluster.rsplit('/', 1)[0]}/{database}"


def create_database(cluster: str, name: str, *, template: str | None = None) -> str:
    """A new empty (or templated) database on the cluster; its URL."""
    with psycopg.connect(cluster, autocommit=True) as admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            admin.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    return url_of(cluster, name)


def _migrated_template(cluster: str) -> str:
    global _template
    if _template is None:
        name = f"groupx_template_{os.getpid()}"
        url = create_database(cluster, name)
        folder = Path(tempfile.mkdtemp(prefix="groupx-pg-template-"))
        (folder / "groupx.json").write_text(json.dumps({"agents": {"kimi": {"cwd": "."}}, "storage": {"url": url}}))
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
            cwd=REPO,
            check=True,
            timeout=180,
            env={**os.environ, "GROUPX_CONFIG": str(folder / "groupx.json")},
        )
        _template = name
    return _template


def room_database_url(workdir: Path) -> str | None:
    """The PostgreSQL URL of the room in ``workdir`` (created, migrated), or None on SQLite runs."""
    cluster = cluster_url()
    if cluster is None:
        return None
    name = "groupx_" + hashlib.sha256(str(workdir.resolve()).encode()).hexdigest()[:20]
    return create_database(cluster, name, template=_migrated_template(cluster))


def room_url_of(config_path: Path) -> str | None:
    """The ``storage.url`` a room's groupx.json names, if any."""
    return (json.loads(config_path.read_text()).get("storage") or {}).get("url")


def read_rows(url: str, sql: str, params: tuple) -> list[dict]:
    """``db_rows`` (tests/agents.py) on PostgreSQL: the same SQL with ``?`` placeholders, and JSON
    and timestamps as text, as SQLite returns them."""
    from psycopg.rows import dict_row
    from psycopg.types.string import TextLoader

    with psycopg.connect(url, row_factory=dict_row, autocommit=True) as db:
        for name in ("json", "jsonb", "timestamptz", "date"):
            db.adapters.register_loader(name, TextLoader)
        return db.execute(sql.replace("?", "%s"), params).fetchall()


def write_rows(url: str, sql: str, rows: list[tuple]) -> None:
    """Insert ``rows`` with the SQLite spelling of ``sql`` (``?`` placeholders; naive times are UTC)."""
    with psycopg.connect(url, options="-c timezone=UTC") as db, db.cursor() as cursor:
        cursor.executemany(sql.replace("?", "%s"), rows)

"""The in-process tier (docs/DECISIONS.md D29): the real commands against the real models on a
SQLite test database, in the test's own process. No server, no CLI, no sleeps: ``make test-fast``.

Every test here gets a database (the ``django_db`` mark is added at collection) and a room of three
agents whose limits are small enough to reach. ``groupx_site/store/db.py``'s executors run inline, so an
async entry point driven by ``async_to_sync`` does its database work on the test's thread, inside
the test's transaction. Tests that need a second connection (races) ask for
``django_db(transaction=True)``: their writes commit, as a second process's would.
"""

from __future__ import annotations

import pytest

from groupx_site.core import sqlite
from setup_wizard.config import GroupXConfig
from tests.event_loops import no_parked_event_loop  # noqa: F401 (an autouse fixture: tests/event_loops.py)

AGENTS = ("alpha", "beta", "gamma")
LIMITS = {"queuePerAgent": 3, "rootTurns": 6, "hopCount": 3, "actorCallsPerRoot": 2}


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/unit/" in item.nodeid and item.get_closest_marker("django_db") is None:
            item.add_marker(pytest.mark.django_db)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(tmp_path_factory):
    # A file, not SQLite's shared-cache memory database: a second connection then meets the write
    # lock and the busy timeout as another process would.
    # tmp_path_factory is per xdist worker, so parallel runs never share it.
    from django.conf import settings

    if settings.DATABASES["default"]["ENGINE"] != sqlite.ENGINE:
        return  # make test-pg's run of the parity test: pytest-django names a test database per worker
    settings.DATABASES["default"]["TEST"]["NAME"] = str(tmp_path_factory.mktemp("unit-db") / "groupx.sqlite3")


@pytest.fixture(autouse=True)
def unit_room(settings):
    """Three live agents (alpha, beta, gamma) with their Actor rows, and the executors inline."""
    from agents.actor_rows import sync_actors
    from setup_wizard import roster

    settings.GROUPX_DB_INLINE = True
    settings.GROUPX_CONFIG = GroupXConfig.model_validate(
        {"agents": {name: {"driver": "kimi", "cwd": "."} for name in AGENTS}, "limits": LIMITS}
    )
    roster.configured_agents.cache_clear()
    sync_actors()
    yield settings.GROUPX_CONFIG
    roster.configured_agents.cache_clear()

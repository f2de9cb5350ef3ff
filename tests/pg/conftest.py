"""The PostgreSQL tier (``make test-pg``, docs/DECISIONS.md D53/D54): its tests need the cluster that
``python -m tests.pg.cluster`` starts (``GROUPX_TEST_PG_URL``); ``make test`` deselects them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pg.databases import cluster_url
from tests.split.processes import RedisServer

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    if cluster_url():
        return
    drop = [item for item in items if HERE in Path(item.fspath).parents]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [item for item in items if item not in drop]


@pytest.fixture(scope="session")
def cluster() -> str:
    return cluster_url()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()

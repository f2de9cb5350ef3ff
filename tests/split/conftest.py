"""One room, two modes (docs/DECISIONS.md D46): the embedded default (one daphne
process runs web and agents) and split mode (two daphne web processes and an agents' worker,
``manage.py runworker groupx-agents``, over Redis on loopback, one config and one SQLite file).

The ``mode_room`` fixture is parameterised by mode. ``make test`` runs the embedded param;
``make test-split`` (``GROUPX_SPLIT_TIER=1``) runs the split one, which needs ``redis-server``
(installed with apt when missing, as root).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.agents import fake_agents
from tests.server import GroupXServer, free_port, wait_until
from tests.split.processes import RUNS, STANDS_BY, AgentsWorker, RedisServer

HERE = Path(__file__).resolve().parent
SPLIT_TIER = os.environ.get("GROUPX_SPLIT_TIER") == "1"
TIMEOUTS = {"handshakeMs": 600000, "closeMs": 300}
# Short enough for a standby to take over within the tests' deadlines, long enough for a loaded machine.
LEASE_ENV = {"GROUPX_LEASE_HEARTBEAT_MS": "300", "GROUPX_LEASE_EXPIRY_MS": "6000", "GROUPX_WORKER_POLL_MS": "500"}


def pytest_collection_modifyitems(config, items):
    """In tests/split only the embedded param belongs to ``make test``; the split param and every
    other test here (split mode alone) belong to ``make test-split``."""
    keep, drop = [], []
    for item in items:
        if HERE not in Path(item.fspath).parents:  # a conftest hook sees the whole session's items
            keep.append(item)
            continue
        callspec = getattr(item, "callspec", None)
        embedded = callspec is not None and callspec.params.get("mode_room") == "embedded"
        (keep if embedded != SPLIT_TIER else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


class ModeRoom:
    """A room in one mode: ``web`` (and ``webs``) answer HTTP/SSE/MCP; ``kill_agents_runtime``
    SIGKILLs whatever runs the agents and brings them back (a restarted server, or the standby
    worker taking the lease)."""

    def __init__(self, mode: str, webs: list[GroupXServer], workers: list[AgentsWorker]):
        self.mode, self.webs, self.workers = mode, webs, workers
        self.web = webs[0]
        self.fake_log_dir = self.web.fake_log_dir

    def kill_agents_runtime(self) -> None:
        if self.mode == "embedded":
            self.web.kill()
            self.web.start()
            return
        owner = self.workers[0]
        owner.kill()
        self.workers.remove(owner)
        standby = self.workers[0]
        standby.wait_for("this worker owns the room's agents", timeout=60)
        self.workers.append(AgentsWorker(self.web, f"worker{len(self.workers) + 2}").start(expect=STANDS_BY))

    def stop(self) -> None:
        for worker in self.workers:
            worker.stop()
        for web in self.webs:
            web.stop()


def start_split_room(
    workdir,
    agents: dict,
    redis: RedisServer,
    *,
    webs: int = 2,
    workers: int = 2,
    worker_agents: list[str] | None = None,
    **extra,
) -> ModeRoom:
    """``extra``: more of groupx.json (the room assistant's block, say). ``worker_agents``: one
    worker per entry, started with ``--agents <entry>`` at the same moment (D58), instead of ``workers``."""
    port = free_port()
    config = {
        "server": {"host": "127.0.0.1", "port": port},
        "timeouts": TIMEOUTS,
        "agents": agents,
        "channelLayer": {"redisUrl": redis.url},
        **extra,
    }
    first = GroupXServer(workdir, config, env=LEASE_ENV, name="web1").start(port=port)
    servers = [first] + [
        GroupXServer(workdir, config, env=LEASE_ENV, name=f"web{n + 2}").start(migrate=False) for n in range(webs - 1)
    ]
    if worker_agents is not None:  # launched at the same moment: they race for the room's lease
        started = [
            AgentsWorker(first, f"worker{n + 1}", agents=names).launch() for n, names in enumerate(worker_agents)
        ]
        for worker in started:
            worker.wait_for(RUNS, timeout=60)
    else:
        started = [AgentsWorker(first, "worker1").start()]
        started += [AgentsWorker(first, f"worker{n + 2}").start(expect=STANDS_BY) for n in range(workers - 1)]
    room = ModeRoom("split", servers, started)
    wait_until(
        lambda: first.get("/api/health").json().get("worker", {}).get("owner"),
        timeout=30,
        message="health to name the worker that owns the room",
    )
    return room


def open_mode_room(request, workdir, **extra) -> ModeRoom:
    """The room of ``mode_room``'s param (``request.param``), with ``extra`` in its groupx.json."""
    agents = fake_agents(workdir, "kimi", "hermes")
    if request.param == "embedded":
        web = GroupXServer(workdir, {"timeouts": TIMEOUTS, "agents": agents, **extra}, env=LEASE_ENV).start()
        return ModeRoom("embedded", [web], [])
    return start_split_room(workdir, agents, request.getfixturevalue("redis_server"), **extra)


@pytest.fixture(scope="module", params=["embedded", "split"])
def mode_room(request, tmp_path_factory):
    room = open_mode_room(request, tmp_path_factory.mktemp(f"room-{request.param}"))
    yield room
    room.stop()

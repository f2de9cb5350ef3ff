"""One owner of the agents in split mode (PROTOCOL §10.6, docs/DECISIONS.md D45): a web process
starts no agent session, a room with no worker says so and its Turns wait, a second worker stands
by and takes over, and a worker that lost its lease stops its agents at once."""

from __future__ import annotations

import os
import signal

import pytest

from agents.fakes import wirelog
from tests.agents import fake_agents, send, wait_terminal
from tests.server import GroupXServer, free_port
from tests.split.conftest import LEASE_ENV, TIMEOUTS
from tests.split.processes import OWNS, STANDS_BY, AgentsWorker, doctor

DEADLINE = 60


@pytest.fixture(scope="module")
def web(tmp_path_factory, redis_server):
    workdir = tmp_path_factory.mktemp("lease")
    port = free_port()
    config = {
        "server": {"host": "127.0.0.1", "port": port},
        "timeouts": TIMEOUTS,
        "agents": fake_agents(workdir, "kimi"),
        "channelLayer": {"redisUrl": redis_server.url},
    }
    server = GroupXServer(workdir, config, env=LEASE_ENV, name="web").start(port=port)
    yield server
    server.stop()


@pytest.fixture
def workers(web):
    started: list[AgentsWorker] = []

    def start(expect: str = OWNS) -> AgentsWorker:
        worker = AgentsWorker(web, f"worker-{len(started) + 1}-{os.getpid()}")
        started.append(worker)
        return worker.start(expect=expect)

    yield start
    for worker in started:
        worker.stop()


def test_with_no_worker_the_room_says_so_starts_no_agent_and_its_turn_waits_until_a_worker_runs(web, workers):
    health = web.get("/api/health").json()
    assert health["worker"]["owner"] is None
    assert "no worker owns the room" in health["worker"]["message"]
    assert health["status"] == "degraded"
    assert [a["status"] for a in health["agents"]] == ["stopped"]
    assert "agents' worker: NONE owns the room" in doctor(web)

    turn_id = send(web, "agent:kimi", "waiting for a worker")["turns"][0]["turnId"]
    assert web.get("/api/health").json()["queuedTurns"] == 1
    assert "this web process starts no agent session" in web.log()
    assert wirelog.read_records(web.fake_log_dir, kind="start") == []  # no CLI was ever started

    owner = workers()
    assert wait_terminal(web, turn_id, timeout=DEADLINE)["type"] == "turn.completed"
    worker = web.get("/api/health").json()["worker"]
    assert worker["owner"]["pid"] == owner.pid and worker["owner"]["since"]
    assert "message" not in worker


def test_a_second_worker_stands_by_and_takes_over_when_the_owner_stops(web, workers):
    owner = workers()
    standby = workers(expect=STANDS_BY)
    assert [s["pid"] for s in web.get("/api/health").json()["worker"]["standbys"]] == [standby.pid]
    assert "a second worker stands by" in doctor(web)

    owner.stop()  # SIGTERM: it closes its agents and releases the lease

    assert owner.proc.returncode == 0, owner.log()  # it ended by itself (stop() SIGKILLs after its deadline)
    assert "its agents are closed and its lease released" in owner.log()

    standby.wait_for(OWNS, timeout=DEADLINE)
    turn_id = send(web, "agent:kimi", "after the handover")["turns"][0]["turnId"]
    assert wait_terminal(web, turn_id, timeout=DEADLINE)["type"] == "turn.completed"
    assert web.get("/api/health").json()["worker"]["owner"]["pid"] == standby.pid


def test_a_stalled_worker_whose_lease_was_taken_stops_its_agents_at_once(web, workers):
    owner = workers()
    standby = workers(expect=STANDS_BY)
    turn_id = send(web, "agent:kimi", "on the first owner")["turns"][0]["turnId"]
    assert wait_terminal(web, turn_id, timeout=DEADLINE)["type"] == "turn.completed"
    clis_of_the_owner = {
        r["pid"]
        for r in wirelog.read_records(web.fake_log_dir, kind="start")
        if not wirelog.read_records(web.fake_log_dir, kind="exit", pid=r["pid"])
    }
    assert clis_of_the_owner

    os.kill(owner.pid, signal.SIGSTOP)  # a stall: its heartbeats stop, its lease expires
    try:
        standby.wait_for(OWNS, timeout=DEADLINE)
    finally:
        os.kill(owner.pid, signal.SIGCONT)

    owner.wait_for("lost the lease", timeout=DEADLINE)
    assert owner.proc.wait(timeout=DEADLINE) != 0
    for pid in clis_of_the_owner:  # its CLIs were closed
        wirelog.wait_for_records(web.fake_log_dir, kind="exit", pid=pid, timeout=DEADLINE)
    turn_id = send(web, "agent:kimi", "on the new owner")["turns"][0]["turnId"]
    assert wait_terminal(web, turn_id, timeout=DEADLINE)["type"] == "turn.completed"

"""Split mode's failures outside a Turn are public (PROTOCOL §14, docs/DECISIONS.md D89): a room
with no live worker is one ``system.error`` until a worker runs it, and a worker that lost its lease
says so once, healed as soon as another runs the room."""

from __future__ import annotations

import os
import signal

from tests.agents import fake_agents
from tests.server import GroupXServer, free_port, wait_until
from tests.split.conftest import LEASE_ENV, TIMEOUTS
from tests.split.processes import OWNS, STANDS_BY, AgentsWorker
from tests.test_system_errors import statuses, system_errors

DEADLINE = 60


def test_no_live_worker_and_a_lost_lease_are_each_one_system_error_until_a_worker_runs_the_room(tmp_path, redis_server):
    port = free_port()
    config = {
        "server": {"host": "127.0.0.1", "port": port},
        "timeouts": TIMEOUTS,
        "agents": fake_agents(tmp_path, "kimi"),
        "channelLayer": {"redisUrl": redis_server.url},
    }
    web = GroupXServer(tmp_path, config, env=LEASE_ENV, name="web").start(port=port)
    workers: list[AgentsWorker] = []
    try:
        [none] = wait_until(lambda: system_errors(web, "worker.none"), timeout=DEADLINE, message="worker.none")
        assert none["body"]["status"] == "active" and none["body"]["code"] == "SESSION_NOT_AVAILABLE"
        assert "No worker runs the room's agents" in none["body"]["message"]

        owner = AgentsWorker(web, "worker-1").start()
        workers.append(owner)
        wait_until(
            lambda: statuses(web, "worker.none") == ["active", "resolved"],
            timeout=DEADLINE,
            message="worker.none healed",
        )

        standby = AgentsWorker(web, "worker-2").start(expect=STANDS_BY)
        workers.append(standby)
        os.kill(owner.pid, signal.SIGSTOP)  # a stall: its lease expires and the standby takes it
        try:
            standby.wait_for(OWNS, timeout=DEADLINE)
        finally:
            os.kill(owner.pid, signal.SIGCONT)
        owner.wait_for("lost the lease", timeout=DEADLINE)

        def lost_and_healed():
            lost = [
                e
                for e in web.events()
                if e["type"] == "system.error" and e["body"]["condition"].startswith("lease.lost:")
            ]
            return lost if [e["body"]["status"] for e in lost] == ["active", "resolved"] else None

        active, resolved = wait_until(lost_and_healed, timeout=DEADLINE, message="the lost lease, then its healing")
        assert str(owner.pid) in active["body"]["message"]
        assert str(standby.pid) in resolved["body"]["message"]
    finally:
        for worker in workers:
            worker.stop()
        web.stop()

"""The lease rules of several workers (agents/lease.py, agents/agent_leases.py, docs/DECISIONS.md
D58), on the models in-process: each agent has one live holder, the room's lease one owner, a
dead or expired holder's agents go to the next worker that wants them (and its row is stopped, so
it stops everything it ran), and restart recovery can be one agent's alone."""

from __future__ import annotations

import subprocess
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.core.management.base import CommandError
from django.utils import timezone

from agents import agent_runtime, lease
from agents.models import RuntimeWorker
from groupx_site.store import db
from setup_wizard.config import GroupXConfig
from tests.unit.room import queued_turn, running, status

ALPHA, BETA, GAMMA = "agent:alpha", "agent:beta", "agent:gamma"


def worker(name: str, pid: int | None = None) -> lease.Me:
    here = lease.Me.here("worker")
    return lease.Me(worker_id=f"worker:{name}", mode="worker", host=here.host, pid=pid or here.pid)


def expire(me: lease.Me) -> None:
    RuntimeWorker.objects.filter(worker_id=me.worker_id).update(expires_at=timezone.now() - timedelta(seconds=1))


def a_dead_pid() -> int:
    finished = subprocess.Popen(["true"])
    finished.wait()
    return finished.pid


def test_two_workers_split_three_agents_and_the_first_one_also_holds_the_room():
    first, second = worker("one"), worker("two")
    held_first = lease.beat(first, [ALPHA, BETA])
    held_second = lease.beat(second, [GAMMA])
    assert (held_first.room, held_first.agents) == (True, {ALPHA, BETA})
    assert (held_second.room, held_second.agents) == (False, {GAMMA})
    report = lease.describe()
    assert report["owner"]["workerId"] == first.worker_id
    assert report["agentWorkers"] == {ALPHA: first.worker_id, BETA: first.worker_id, GAMMA: second.worker_id}
    assert {(w["workerId"], tuple(w["agents"]), w["roomJobs"]) for w in report["workers"]} == {
        (first.worker_id, (ALPHA, BETA), True),
        (second.worker_id, (GAMMA,), False),
    }


def test_an_agent_held_by_a_live_worker_is_not_taken_by_another_that_wants_it():
    owner, standby = worker("owner"), worker("standby")
    lease.beat(owner, [ALPHA])
    held = lease.beat(standby, [ALPHA])
    assert held.alive and not held.agents and not held.room
    assert lease.describe()["agentWorkers"] == {ALPHA: owner.worker_id}


def test_an_expired_workers_agents_go_to_a_standby_and_the_expired_one_learns_it_lost_everything():
    first, second, standby = worker("one"), worker("two"), worker("standby")
    lease.beat(first, [ALPHA, BETA])
    lease.beat(second, [GAMMA])
    assert not lease.beat(standby, [ALPHA, BETA]).agents

    expire(first)
    taken = lease.beat(standby, [ALPHA, BETA])

    assert taken.agents == {ALPHA, BETA} and taken.room  # nobody else holds the room either
    assert lease.beat(second, [GAMMA]).agents == {GAMMA}  # the other worker's agent is untouched
    assert lease.beat(first, [ALPHA, BETA]) == lease.Holdings(alive=False)  # it stops all it ran


def test_the_room_goes_to_another_worker_when_its_owner_expires_and_the_agents_stay_with_their_holders():
    first, second = worker("one"), worker("two")
    lease.beat(first, [ALPHA])
    lease.beat(second, [GAMMA])
    expire(first)
    held = lease.beat(second, [GAMMA])
    assert held.room and held.replaced["workerId"] == first.worker_id
    assert held.agents == {GAMMA}  # alpha is not one of the agents it runs: it waits for its own worker
    assert lease.describe()["agentWorkers"] == {GAMMA: second.worker_id}


def test_a_worker_whose_pid_is_gone_on_this_host_loses_its_agents_without_waiting_for_expiry():
    killed = worker("killed", pid=a_dead_pid())
    lease.beat(killed, [ALPHA])
    restarted = worker("restarted")
    assert lease.beat(restarted, [ALPHA]).agents == {ALPHA}


def test_a_clean_release_frees_the_agents_for_the_next_beat():
    first, standby = worker("one"), worker("standby")
    lease.beat(first, [ALPHA])
    lease.release(first)
    assert lease.beat(standby, [ALPHA]).agents == {ALPHA}


def test_the_embedded_claim_takes_the_room_and_every_agent_whatever_the_rows_say():
    lease.beat(worker("old"), [ALPHA])
    embedded = lease.Me.here("embedded")
    lease.claim(embedded, [ALPHA, BETA, GAMMA])
    report = lease.describe()
    assert report["owner"]["workerId"] == embedded.worker_id
    assert set(report["agentWorkers"].values()) == {embedded.worker_id}


def test_each_agents_health_is_read_from_the_row_of_the_worker_that_runs_it():
    first, second = worker("one"), worker("two")
    lease.beat(first, [ALPHA], {ALPHA: {"status": "ready"}, GAMMA: {"status": "starting"}, "user:assistant": {"s": 1}})
    lease.beat(second, [GAMMA], {GAMMA: {"status": "failed"}})
    health = lease.describe()["agentsHealth"]
    assert health == {ALPHA: {"status": "ready"}, GAMMA: {"status": "failed"}, "user:assistant": {"s": 1}}


def test_one_agents_restart_recovery_interrupts_its_running_turn_and_leaves_the_others_alone():
    alpha_turn, beta_turn = queued_turn(ALPHA), queued_turn(BETA)
    running(alpha_turn)
    running(beta_turn)
    counts = async_to_sync(db.write(agent_runtime._recover_turns))({ALPHA}, False)
    assert counts["interrupted"] == 1
    assert (status(alpha_turn), status(beta_turn)) == ("interrupted", "running")


def test_the_room_leases_recovery_leaves_every_live_agents_turns_to_their_own_workers():
    alpha_turn = queued_turn(ALPHA)
    running(alpha_turn)
    counts = async_to_sync(db.write(agent_runtime._recover_turns))(set(), True)
    assert counts["interrupted"] == 0 and status(alpha_turn) == "running"


def config(**fields) -> GroupXConfig:
    return GroupXConfig.model_validate(
        {"agents": {name: {"driver": "kimi", "cwd": "."} for name in ("alpha", "beta")}, **fields}
    )


SHARED = {"channelLayer": {"redisUrl": "redis://127.0.0.1:6379/0"}, "storage": {"url": "postgresql://127.0.0.1/room"}}


@pytest.mark.parametrize("fields", [{}, {"channelLayer": SHARED["channelLayer"]}, {"storage": SHARED["storage"]}])
def test_agents_is_refused_without_both_redis_and_postgresql(settings, fields):
    from groupx_site.management.commands.runworker import chosen_agents

    settings.GROUPX_CONFIG = config(**fields)
    with pytest.raises(CommandError, match="needs split mode on PostgreSQL.*SQLite takes one writer"):
        chosen_agents("alpha")


def test_agents_accepts_agent_and_actor_ids_and_refuses_unknown_ones_naming_the_rooms_agents(settings):
    from groupx_site.management.commands.runworker import chosen_agents
    from setup_wizard import roster

    settings.GROUPX_CONFIG = config(**SHARED)
    roster.configured_agents.cache_clear()
    assert chosen_agents("alpha, agent:beta") == [ALPHA, BETA]
    with pytest.raises(CommandError, match="names no agent of this room: nobody; its agents are alpha, beta"):
        chosen_agents("alpha,nobody")

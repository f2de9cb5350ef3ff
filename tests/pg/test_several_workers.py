"""Several agents' workers on PostgreSQL and Redis, each running some agents
(docs/DECISIONS.md D58): ``manage.py runworker groupx-agents --agents kimi,claude`` and ``--agents
hermes`` share a room of two web processes. ``@all`` is answered by both; health and doctor say
who runs what; SIGKILL of one worker mid-Turn interrupts only its agent's running Turn, once a
standby for its agents takes them over, and the other worker's Turn runs on untouched; posts to
both web processes at once reach every stream once and in order.

The tests share one room and run in order (the kill comes last but one)."""

from __future__ import annotations

import os

import pytest

from agents.fakes import wirelog
from tests.agents import cancel, fake_agents, prompts_sent, send, turn_events, wait_terminal
from tests.pg.test_seq_order import posts_reach_every_stream_once_and_in_order
from tests.server import wait_until
from tests.split.conftest import start_split_room
from tests.split.processes import OWNS, RUNS, STANDS_BY, AgentsWorker, doctor

DEADLINE = 90  # a loaded 2-core machine: deadlines on observable conditions, never sleeps
FIRST, SECOND = "kimi,claude", "hermes"


@pytest.fixture(scope="module")
def room(tmp_path_factory, redis_server):
    workdir = tmp_path_factory.mktemp("several-workers")
    room = start_split_room(
        workdir, fake_agents(workdir, "kimi", "claude", "hermes"), redis_server, webs=2, worker_agents=[FIRST, SECOND]
    )
    first, second = room.workers
    first.wait_for("runs agents agent:claude, agent:kimi", timeout=DEADLINE)
    second.wait_for("runs agents agent:hermes", timeout=DEADLINE)
    wait_until(
        lambda: room.web.get("/api/health").json()["status"] == "ok",
        timeout=DEADLINE,
        message="health ok: every agent run by a worker, none failed",
    )
    yield room
    room.stop()


def started(web, turn_id: str) -> bool:
    return any(e["type"] == "turn.started" for e in turn_events(web, turn_id))


def parent_pids(room, flavor: str) -> set[int]:
    return {record["ppid"] for record in wirelog.read_records(room.web.fake_log_dir, flavor=flavor, kind="start")}


def test_health_and_doctor_say_which_worker_runs_each_agent_and_which_runs_the_room_wide_jobs(room):
    first, second = room.workers
    health = room.webs[1].get("/api/health").json()  # a web process that runs nothing itself
    workers = {w["pid"]: w for w in health["worker"]["workers"]}
    assert workers[first.pid]["agents"] == ["agent:claude", "agent:kimi"]
    assert workers[second.pid]["agents"] == ["agent:hermes"]
    assert sum(w["roomJobs"] for w in workers.values()) == 1
    assert health["worker"]["owner"]["pid"] in workers
    by_agent = {a["actorId"]: a["worker"] for a in health["agents"]}
    assert by_agent == {
        "agent:kimi": workers[first.pid]["workerId"],
        "agent:claude": workers[first.pid]["workerId"],
        "agent:hermes": workers[second.pid]["workerId"],
    }
    assert health["status"] == "ok"
    report = doctor(room.web)
    assert f"{workers[first.pid]['workerId']} runs agent:claude, agent:kimi" in report
    assert f"{workers[second.pid]['workerId']} runs agent:hermes" in report


def test_at_all_is_answered_by_both_workers_each_running_its_own_agents_clis(room):
    first, second = room.workers
    accepted = send(room.webs[1], "@all", "hello, everyone")
    assert len(accepted["turns"]) == 3
    for turn in accepted["turns"]:
        assert wait_terminal(room.web, turn["turnId"], timeout=DEADLINE)["type"] == "turn.completed"
    assert parent_pids(room, "kimi") == parent_pids(room, "claude") == {first.pid}
    assert parent_pids(room, "hermes") == {second.pid}


def test_posts_to_both_web_processes_at_once_reach_every_stream_once_and_in_order(room):
    posts_reach_every_stream_once_and_in_order(room, ["agent:kimi", "agent:hermes", "agent:claude"], posts_per_web=10)


def test_killing_one_worker_mid_turn_interrupts_only_its_agents_turn_and_its_standby_runs_their_queue(room):
    first, second = room.workers
    web = room.web
    standby = AgentsWorker(web, "standby", agents=FIRST).start(expect=STANDS_BY, timeout=DEADLINE)
    room.workers.append(standby)
    killed_turn = send(web, "agent:kimi", "[[fake: hang]]")["turns"][0]["turnId"]
    queued_turn = send(web, "agent:kimi", "after the kill")["turns"][0]["turnId"]
    other_turn = send(web, "agent:hermes", "[[fake: hang]] on the other worker")["turns"][0]["turnId"]
    wait_until(
        lambda: started(web, killed_turn) and started(web, other_turn),
        timeout=DEADLINE,
        message="both hanging Turns to start",
    )

    first.kill()  # SIGKILL
    room.workers.remove(first)

    standby.wait_for(RUNS, timeout=DEADLINE)
    assert wait_terminal(web, killed_turn, timeout=DEADLINE)["type"] == "turn.interrupted"
    assert wait_terminal(web, queued_turn, timeout=DEADLINE)["type"] == "turn.completed"
    # The other worker's Turn was never interrupted: it still runs, and its cancel reaches its lane.
    assert not any(e["type"] == "turn.interrupted" for e in turn_events(web, other_turn))
    cancel(room.webs[1], other_turn)
    assert wait_terminal(web, other_turn, timeout=DEADLINE)["type"] == "turn.cancelled"
    assert second.proc.poll() is None

    kimi_prompts = [str(p) for p in prompts_sent(web, "kimi")]
    assert sum("[[fake: hang]]" in p for p in kimi_prompts) == 1  # never sent twice
    assert sum("after the kill" in p for p in kimi_prompts) == 1
    assert sum("on the other worker" in str(p) for p in prompts_sent(web, "hermes")) == 1
    assert parent_pids(room, "kimi") == {first.pid, standby.pid}
    assert parent_pids(room, "hermes") == {second.pid}  # its CLI was never restarted

    def taken_over():
        worker = web.get("/api/health").json()["worker"]
        holders = {w["pid"]: w for w in worker["workers"]}
        return (
            first.pid not in holders
            and holders.get(standby.pid, {}).get("agents") == ["agent:claude", "agent:kimi"]
            and worker["owner"] is not None
            and worker["owner"]["pid"] in (second.pid, standby.pid)
        )

    wait_until(taken_over, timeout=DEADLINE, message="health to show the standby running the killed worker's agents")
    room_jobs = next(w for w in (second, standby) if OWNS in w.log())
    assert room_jobs.pid == web.get("/api/health").json()["worker"]["owner"]["pid"]


def test_a_worker_refuses_agents_the_room_does_not_have(room):
    refused = AgentsWorker(room.web, f"refused-{os.getpid()}", agents="kimi,nobody")
    with pytest.raises(AssertionError, match="names no agent of this room: nobody"):
        refused.start(expect=RUNS, timeout=DEADLINE)
    assert refused.proc.returncode != 0

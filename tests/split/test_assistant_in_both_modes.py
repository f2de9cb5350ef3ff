"""The room assistant in both modes (docs/DECISIONS.md D55): the side chat served by any web
process, the brain running where the agents run (the server of the embedded default, the worker
that holds the lease in split mode) and calling the operator tools on a web process's
``/mcp/operator``. The brain is the demo assistant (the fake Claude CLI scripted to ask every agent
for a status through the operator tools) over its real wire."""

from __future__ import annotations

import json

import pytest

from tests.agents import db_rows, mcp_calls, wire
from tests.assistant_room import assistant_config, in_background, say
from tests.server import FAKES_BIN, wait_until
from tests.split.conftest import open_mode_room
from tests.split.processes import AgentsWorker

DEADLINE = 120  # a loaded 2-core machine: deadlines, not sleeps
STATUS_SUMMARY = "ask every agent for a status and summarise"


@pytest.fixture(scope="module", params=["embedded", "split"])
def mode_room(request, tmp_path_factory):
    workdir = tmp_path_factory.mktemp(f"assistant-{request.param}")
    assistant = assistant_config(workdir)
    assistant["brain"]["command"] = str(FAKES_BIN / "demo-assistant")
    room = open_mode_room(request, workdir, assistant=assistant)
    try:
        wait_ready(room.webs[-1])
        yield room
    finally:
        room.stop()


def state(web) -> dict:
    return web.get("/api/assistant").json()


def wait_ready(web) -> None:
    wait_until(
        lambda: state(web)["status"] == "ready",
        timeout=DEADLINE,
        interval=0.1,
        message="the assistant's brain ready, as this web process shows it",
    )


def brain_parents(room) -> list[int]:
    """The pid of the process that started each of the brain's CLIs, oldest first."""
    return [record["ppid"] for record in wire(room.web, "claude", kind="start")]


def runtime_pids(room) -> set[int]:
    return {room.web.proc.pid} if room.mode == "embedded" else {worker.pid for worker in room.workers}


def prompts_holding(room, token: str) -> int:
    return sum(1 for record in wire(room.web, "claude", kind="in") if token in json.dumps(record.get("msg")))


def test_the_side_chat_is_answered_through_a_web_process_by_the_brain_calling_operator_tools(mode_room):
    web = mode_room.webs[-1]  # in split mode a web process that runs neither the agents nor the brain
    answer = say(web, STATUS_SUMMARY, timeout=DEADLINE * 2)

    assert answer.status_code == 200, answer.text
    summary = answer.json()["assistantMessage"]["content"]
    assert summary.startswith("I asked 2 agent(s) for a status:"), summary
    assert "- agent:kimi: echo: " in summary and "- agent:hermes: echo: " in summary
    assert mcp_calls(mode_room.web, "claude", "worker_ask")  # the agents were asked through the operator tools
    assert brain_parents(mode_room)[-1] in runtime_pids(mode_room)
    assert answer.json()["status"] == "ready"


def test_the_same_command_id_posted_to_the_other_web_process_joins_the_run_in_flight(mode_room):
    first_web, other_web = mode_room.webs[0], mode_room.webs[-1]
    content = "[[fake: stream n=20 delay_ms=100]] join-across-token"
    first = in_background(lambda: say(first_web, content, "side-join-across", timeout=DEADLINE * 2))
    wait_until(lambda: state(other_web)["status"] == "busy", timeout=DEADLINE, message="the brain busy")

    second = say(other_web, content, "side-join-across", timeout=DEADLINE * 2).json()
    first = first().json()

    assert second["assistantMessage"] == first["assistantMessage"]
    assert prompts_holding(mode_room, "join-across-token") == 1
    rows = db_rows(
        mode_room.web,
        "SELECT role FROM assistant_conversation_messages WHERE client_command_id = ? "
        "OR reply_to_id IN (SELECT message_id FROM assistant_conversation_messages "
        "WHERE client_command_id = ?)",
        "side-join-across",
        "side-join-across",
    )
    assert sorted(row["role"] for row in rows) == ["assistant", "user"]


def test_a_run_posted_to_one_web_process_is_cancelled_from_the_other(mode_room):
    first_web, other_web = mode_room.webs[0], mode_room.webs[-1]
    answer = in_background(lambda: say(first_web, "[[fake: hang]]", "side-cancel-across", timeout=DEADLINE * 2))
    wait_until(lambda: state(other_web)["status"] == "busy", timeout=DEADLINE, message="the brain busy")

    accepted = other_web.post("/api/assistant/cancel", {"clientCommandId": "side-cancel-across"})

    assert accepted.status_code == 200 and accepted.json() == {"accepted": True}
    assert answer().json()["assistantMessage"]["outcome"] == "cancelled"
    assert other_web.post("/api/assistant/cancel", {"clientCommandId": "side-cancel-across"}).json() == {
        "accepted": False
    }
    wait_ready(other_web)


def test_the_brain_is_back_after_the_process_that_runs_it_is_killed(mode_room):
    before = brain_parents(mode_room)[-1]

    mode_room.kill_agents_runtime()  # SIGKILL; the standby (split) or a restarted server takes over

    web = mode_room.webs[-1]
    wait_ready(web)
    answer = say(web, STATUS_SUMMARY, timeout=DEADLINE * 2)
    assert answer.status_code == 200, answer.text
    assert answer.json()["assistantMessage"]["content"].startswith("I asked 2 agent(s) for a status:")
    assert brain_parents(mode_room)[-1] != before
    assert brain_parents(mode_room)[-1] in runtime_pids(mode_room)


def test_with_no_worker_a_web_process_says_so_and_writes_nothing_until_a_worker_runs(mode_room):
    if mode_room.mode == "embedded":
        pytest.skip("the embedded default runs the brain itself")
    web = mode_room.webs[-1]
    for worker in mode_room.workers:
        worker.stop()
    mode_room.workers.clear()
    wait_until(
        lambda: "no worker owns the room" in (state(web).get("detail") or ""),
        timeout=DEADLINE,
        message="the assistant's status to say no worker owns the room",
    )
    assert state(web)["status"] == "starting"
    rows = len(db_rows(web, "SELECT message_id FROM assistant_conversation_messages"))

    refused = say(web, "anyone there?", "side-no-worker")

    assert refused.status_code == 503 and refused.json()["error"]["code"] == "SESSION_NOT_AVAILABLE"
    assert len(db_rows(web, "SELECT message_id FROM assistant_conversation_messages")) == rows
    mode_room.workers.append(AgentsWorker(mode_room.web, "worker-again").start())
    wait_ready(web)
    assert say(web, STATUS_SUMMARY, "side-no-worker", timeout=DEADLINE * 2).status_code == 200


def test_settings_saved_through_one_web_process_read_restart_required_on_every_one(mode_room):
    saving_web, other_web = mode_room.webs[0], mode_room.webs[-1]
    draft = saving_web.get("/api/setup").json()["config"]
    before = json.loads(json.dumps(draft))
    draft["assistant"]["extraInstructions"] = "Answer in one line."
    try:
        assert saving_web.post("/api/setup", {"config": draft}).status_code == 200
        for web in mode_room.webs:
            assert state(web)["status"] == "restart_required"
    finally:
        assert other_web.post("/api/setup", {"config": before}).status_code == 200  # the settings it runs again
    wait_ready(saving_web)
    wait_ready(other_web)

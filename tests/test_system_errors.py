"""Failures outside a Turn are public (PROTOCOL §14): one durable ``system.error`` when a condition
begins, with its code and a plain message, none for the retries that fail again, and one with
``status: resolved`` when it heals (docs/DECISIONS.md D89). Real servers, the fake CLIs."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from tests.agents import db_rows, fake_agents, send, wait_terminal
from tests.assistant_room import assistant_config, assistant_room, say
from tests.server import GroupXServer, hanging_agent, wait_until
from tests.test_context import chat
from tests.test_health_promises import WAIT_FOR_SESSIONS, damage_table_pages

FAST_BEAT = {"GROUPX_LEASE_HEARTBEAT_MS": "200"}  # the room's conditions are looked at every beat


def system_errors(server: GroupXServer, condition: str) -> list[dict]:
    return [e for e in server.events() if e["type"] == "system.error" and e["body"]["condition"] == condition]


def statuses(server: GroupXServer, condition: str) -> list[str]:
    return [e["body"]["status"] for e in system_errors(server, condition)]


def failure_count(server: GroupXServer) -> int:
    rows = db_rows(server, "SELECT failure_count FROM memory_datedmemoryrollup")
    return max((row["failure_count"] for row in rows), default=0)


def fake_scenario(agents: dict, name: str, scenario: dict) -> None:
    (Path(agents[name]["cwd"]) / ".groupx-fake.json").write_text(json.dumps(scenario))


def test_an_agent_whose_cli_keeps_failing_to_start_is_one_system_error_until_a_start_works(tmp_path):
    agents = fake_agents(tmp_path, "kimi", scenarios={"kimi": {"exit_on_start": {"code": 3, "stderr": "no luck"}}})
    server = GroupXServer(tmp_path, {"agents": agents, "timeouts": {"closeMs": 300}}, env=WAIT_FOR_SESSIONS)
    try:
        server.start(timeout=90)
        [error] = system_errors(server, "session:agent:kimi")
        assert error["body"]["status"] == "active" and error["body"]["actorId"] == "agent:kimi"
        assert error["body"]["code"] == "ADAPTER_START_FAILED"
        assert "could not start" in error["body"]["message"] and error["actor"]["actorId"] == "system:groupx"
        [card] = server.get("/api/bootstrap").json()["agents"]
        assert card["problems"] == {
            "session:agent:kimi": {"code": "ADAPTER_START_FAILED", "message": error["body"]["message"]}
        }

        # The next Turn tries three more starts, which fail too: the Turn fails, the room hears nothing new.
        failing = send(server, "agent:kimi", "are you there?")["turns"][0]["turnId"]
        assert wait_terminal(server, failing, timeout=60)["type"] == "turn.failed"
        assert statuses(server, "session:agent:kimi") == ["active"]

        fake_scenario(agents, "kimi", {})  # the CLI is fixed
        back = send(server, "agent:kimi", "and now?")["turns"][0]["turnId"]
        assert wait_terminal(server, back, timeout=60)["type"] == "turn.completed"
        healed = system_errors(server, "session:agent:kimi")
        assert [e["body"]["status"] for e in healed] == ["active", "resolved"]
        assert healed[1]["body"]["code"] == "ADAPTER_START_FAILED" and healed[1]["body"]["actorId"] == "agent:kimi"
        assert "problems" not in server.get("/api/bootstrap").json()["agents"][0]
    finally:
        server.stop()


def test_a_dated_memory_rollup_that_keeps_failing_is_one_system_error_until_one_is_written(
    make_server, tmp_path, monkeypatch
):
    monkeypatch.setenv("GROUPX_DATED_MEMORY_QUIET_MS", "0")
    monkeypatch.setenv("GROUPX_DATED_MEMORY_BACKOFF_MS", "200")
    monkeypatch.setenv("GROUPX_MEMORY_TICK_MS", "100")
    agents = fake_agents(tmp_path, "kimi", scenarios={"kimi": {"default_turn": ["fail"]}})
    room = make_server(agents)
    turn_id = send(room, "agent:kimi", "[[fake: reply text=ok]] a full batch " + "x" * 16_000)["turns"][0]["turnId"]
    assert wait_terminal(room, turn_id)["type"] == "turn.completed"

    wait_until(lambda: system_errors(room, "memory.dated:agent:kimi"), timeout=30, message="the rollup's system.error")
    wait_until(lambda: failure_count(room) >= 2, timeout=30, message="a retry that failed again")
    [error] = system_errors(room, "memory.dated:agent:kimi")
    assert error["body"]["status"] == "active" and error["body"]["actorId"] == "agent:kimi" and error["body"]["code"]
    assert "dated memory" in error["body"]["message"]

    fake_scenario(agents, "kimi", {"default_turn": ["reply text=RECOVERED-NOTE"]})
    wait_until(
        lambda: statuses(room, "memory.dated:agent:kimi")[-1] == "resolved", timeout=30, message="the rollup's recovery"
    )
    assert statuses(room, "memory.dated:agent:kimi") == ["active", "resolved"]


def test_a_compaction_no_agent_could_write_is_one_system_error_until_one_works(make_server, tmp_path):
    agents = fake_agents(tmp_path, "kimi")
    room = make_server(agents)
    chat(room, "agent:kimi", 7)
    fake_scenario(agents, "kimi", {"default_turn": ["fail"]})  # every summariser run fails from here

    for _ in range(2):
        failed = room.post("/api/context/compact", {"clientCommandId": f"c-{uuid.uuid4()}"}, timeout=60)
        assert failed.status_code == 503
    [error] = system_errors(room, "room.summary")
    assert error["body"]["status"] == "active" and error["body"]["code"] == failed.json()["error"]["code"]
    assert "actorId" not in error["body"]  # the room's, no agent's

    fake_scenario(agents, "kimi", {"default_turn": ["reply text=A-SUMMARY"]})
    done = room.post("/api/context/compact", {"clientCommandId": f"c-{uuid.uuid4()}"}, timeout=60)
    assert done.status_code == 200 and done.json()["compacted"] is True
    assert statuses(room, "room.summary") == ["active", "resolved"]


def test_a_failed_integrity_check_is_a_system_error_of_the_room(tmp_path):
    server = GroupXServer(
        tmp_path,
        {"agents": {"sleeper": hanging_agent(tmp_path)}, "timeouts": {"handshakeMs": 600000, "closeMs": 300}},
        env=FAST_BEAT,
    )
    try:
        server.start()
        damage_table_pages(tmp_path / ".groupx" / "groupx.db", "auth_group")  # a table the room never reads
        assert server.get("/api/health?integrity=check").json()["store"]["integrityOk"] is False

        [error] = wait_until(
            lambda: system_errors(server, "store.integrity"), timeout=30, message="the integrity system.error"
        )
        assert error["body"]["status"] == "active" and error["body"]["code"] == "STORE_UNAVAILABLE"
        assert "damaged" in error["body"]["message"] and "actorId" not in error["body"]
    finally:
        server.stop()


def test_a_room_assistant_whose_cli_cannot_start_is_one_system_error_until_it_starts(tmp_path):
    gone = {"enabled": True, "brain": {"driver": "claude", "command": str(tmp_path / "gone"), "cwd": str(tmp_path)}}
    server = assistant_room(tmp_path, "kimi", assistant=gone)
    try:
        [error] = wait_until(lambda: system_errors(server, "assistant.brain"), timeout=30, message="the brain's error")
        assert error["body"]["status"] == "active" and error["body"]["code"] == "ADAPTER_NOT_FOUND"
        assert "room assistant" in error["body"]["message"] and "actorId" not in error["body"]
        assert say(server, "anyone there?").json()["assistantMessage"]["outcome"] == "failed"  # tries again, fails
        assert statuses(server, "assistant.brain") == ["active"]

        server.stop()
        config = json.loads(server.config_path.read_text())
        server.write_config({**config, "assistant": assistant_config(tmp_path)})  # the command is fixed
        server.start()

        wait_until(
            lambda: statuses(server, "assistant.brain") == ["active", "resolved"],
            timeout=60,
            message="the brain's error healed",
        )
    finally:
        server.stop()

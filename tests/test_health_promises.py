"""Health as the protocol promises it (FEATURES §16, §7, §3; docs/DECISIONS.md D42).

Real servers over real SQLite files, with the fake CLIs over their real wires: readiness stays
``starting`` (and writes are refused) while an agent is slow to start; a damaged database page
turns ``integrityOk`` false; an agent whose CLI keeps exiting at start is ``degraded`` until a
start works.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

from tests.agents import fake_agents, send, wait_terminal
from tests.server import GroupXServer, hanging_agent, wait_until

WAIT_FOR_SESSIONS = {"GROUPX_SESSION_START_WAIT_MS": "60000"}  # the product's wait, not the harness's 0


def health(server: GroupXServer, query: str = "") -> dict:
    response = server.get(f"/api/health{query}")
    assert response.status_code == 200, response.text
    return response.json()


def agent(body: dict, actor_id: str) -> dict:
    return next(a for a in body["agents"] if a["actorId"] == actor_id)


def message(text: str) -> dict:
    return {"clientCommandId": str(uuid.uuid4()), "to": ["agent:kimi"], "content": text}


def database(server: GroupXServer) -> Path:
    return server.workdir / ".groupx" / "groupx.db"


def damage_table_pages(path: Path, table: str) -> None:
    """Overwrite the root pages of ``table`` and its indexes with bytes no b-tree page can hold (the
    header, page 1, is left alone)."""
    db = sqlite3.connect(path)
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    roots = [
        row[0] for row in db.execute("SELECT rootpage FROM sqlite_master WHERE tbl_name = ? AND rootpage > 1", (table,))
    ]
    db.close()
    assert roots
    with open(path, "r+b") as file:
        for root in roots:
            file.seek((root - 1) * page_size)
            file.write(b"\xff" * page_size)


def test_health_says_starting_and_writes_are_refused_until_a_slow_agent_has_started(tmp_path):
    release = tmp_path / "release-the-handshake"
    agents = fake_agents(tmp_path, "kimi", scenarios={"kimi": {"initialize_wait_for_file": str(release)}})
    server = GroupXServer(
        tmp_path, {"agents": agents, "timeouts": {"handshakeMs": 60000, "closeMs": 300}}, env=WAIT_FOR_SESSIONS
    )
    try:
        server.start(wait_ready=False)

        starting = health(server)
        assert starting["readiness"] == "starting"
        assert agent(starting, "agent:kimi")["status"] == "starting"
        refused = server.post("/api/messages", message("too early"))
        assert refused.status_code == 503
        assert refused.json()["error"]["code"] == "SESSION_NOT_AVAILABLE"
        assert "starting" in refused.json()["error"]["message"]
        assert refused.headers["Retry-After"] == "1"
        snapshot = server.get("/api/bootstrap").json()  # reads answer meanwhile; nothing was written
        assert not [e for e in snapshot["recentEvents"] if e["type"] == "message.created"]

        release.touch()
        ready = wait_until(
            lambda: (body := health(server))["readiness"] == "ready" and body, timeout=60, message="readiness ready"
        )
        # Sessions start before readiness (FEATURES §7): the first "ready" already has the agent up.
        assert agent(ready, "agent:kimi")["status"] == "ready"
        accepted = send(server, "agent:kimi", "now")
        assert wait_terminal(server, accepted["turns"][0]["turnId"])["type"] == "turn.completed"
    finally:
        release.touch()
        server.stop()


def test_the_store_reports_its_integrity_and_the_schema_version_the_database_records(make_server):
    server = make_server()

    store = health(server)["store"]

    assert store["integrityOk"] is True and store["integrityCheckedAt"]
    assert store["schemaVersion"] == 9 and store["journalMode"] == "wal"
    assert "integrityProblems" not in store
    unknown = server.get("/api/health?integrity=later")
    assert unknown.status_code == 400 and unknown.json()["error"]["code"] == "INVALID_ENVELOPE"


def test_a_damaged_page_is_found_on_demand_and_by_the_check_at_start(make_server):
    server = make_server()
    assert health(server)["store"]["integrityOk"] is True

    damage_table_pages(database(server), "auth_group")  # a table the room never reads: only the check can tell

    assert health(server)["store"]["integrityOk"] is True  # the last check, from the start
    checked = health(server, "?integrity=check")
    assert checked["status"] == "degraded"
    assert checked["store"]["integrityOk"] is False and checked["store"]["integrityProblems"]
    assert health(server)["store"]["integrityOk"] is False  # remembered until the next check
    assert server.post("/api/messages", {**message("still here"), "to": ["agent:sleeper"]}).status_code == 202

    server.stop()
    server.start(migrate=False)

    restarted = health(server)
    assert restarted["readiness"] == "ready" and restarted["status"] == "degraded"
    assert restarted["store"]["integrityOk"] is False
    assert restarted["store"]["integrityCheckedAt"] > checked["store"]["integrityCheckedAt"]
    assert "malformed" in restarted["store"]["integrityProblems"][0]  # SQLite's own words


def test_a_database_from_a_newer_groupx_is_refused_at_start_and_health_says_why(make_server):
    server = make_server()
    server.stop()
    db = sqlite3.connect(database(server))
    db.execute("INSERT INTO schema_migrations (version) VALUES (10)")
    db.commit()
    db.close()

    server.start(migrate=False, wait_ready=False)

    failed = wait_until(lambda: (body := health(server))["readiness"] == "failed" and body, message="readiness failed")
    assert failed["status"] == "degraded" and failed["store"]["schemaVersion"] == 10
    assert "schema version 10" in failed["lastError"]["message"]
    refused = server.post("/api/messages", {**message("no"), "to": ["agent:sleeper"]})
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "SESSION_NOT_AVAILABLE"


def test_an_agent_whose_cli_keeps_exiting_at_start_is_degraded_until_a_start_works(tmp_path):
    agents = fake_agents(tmp_path, "kimi", scenarios={"kimi": {"exit_on_start": {"code": 3, "stderr": "no luck"}}})
    server = GroupXServer(tmp_path, {"agents": agents, "timeouts": {"closeMs": 300}}, env=WAIT_FOR_SESSIONS)
    try:
        server.start(timeout=90)  # readiness waits for the three failed attempts: three CLI launches

        # Readiness waited for the start, which used its 3 attempts: the room opens without it.
        down = health(server)
        kimi = agent(down, "agent:kimi")
        assert down["status"] == "degraded"
        assert kimi["status"] == "degraded" and kimi["consecutiveFailures"] == 3
        assert kimi["lastError"]["code"] and kimi["nativeSessionAvailable"] is False
        failed = [e for e in server.events() if e["type"] == "session.failed"]
        assert failed[-1]["body"]["agentStatus"] == "degraded"

        (Path(agents["kimi"]["cwd"]) / ".groupx-fake.json").write_text(json.dumps({}))  # the CLI is fixed
        accepted = send(server, "agent:kimi", "are you back?")

        assert wait_terminal(server, accepted["turns"][0]["turnId"], timeout=60)["type"] == "turn.completed"
        back = agent(health(server), "agent:kimi")
        assert back["status"] == "ready" and back["consecutiveFailures"] == 0 and back.get("lastError") is None
    finally:
        server.stop()


def test_readiness_stops_waiting_for_a_hanging_handshake_after_the_session_start_wait(tmp_path):
    server = GroupXServer(
        tmp_path,
        {"agents": {"sleeper": hanging_agent(tmp_path)}, "timeouts": {"handshakeMs": 600000, "closeMs": 300}},
        env={"GROUPX_SESSION_START_WAIT_MS": "300"},
    )
    try:
        server.start()

        ready = health(server)
        assert ready["readiness"] == "ready"
        assert agent(ready, "agent:sleeper")["status"] == "starting"  # still in its handshake, on its own
    finally:
        server.stop()


def test_a_read_that_meets_a_damaged_page_turns_integrity_false_at_once(make_server):
    server = make_server()
    assert health(server)["store"]["integrityOk"] is True
    # The memory table: the API reads it, and nothing of this room has read or written it yet,
    # so no page cache or WAL frame of the server hides the damaged page.
    damage_table_pages(database(server), "memory_memoryrecord")

    failed = server.get("/api/memory")

    assert failed.status_code == 500 and failed.json()["error"]["code"] == "INTERNAL_ERROR"
    checked = health(server)
    assert checked["status"] == "degraded" and checked["store"]["integrityOk"] is False
    assert "a database call met a damaged page" in checked["store"]["integrityProblems"][0]

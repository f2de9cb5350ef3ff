"""Moving a room from SQLite into PostgreSQL (``manage.py move_to_postgresql``, docs/DECISIONS.md D54):
a room that has answered a Turn and holds memory and identity is copied; the same server, now on
PostgreSQL, serves the same log, search and receipts and goes on from the next seq; a second move
into the now non-empty database is refused and writes nothing."""

from __future__ import annotations

import uuid

from tests.agents import db_rows, fake_agents, send, wait_terminal
from tests.pg.databases import create_database
from tests.server import GroupXServer

TIMEOUTS = {"handshakeMs": 600000, "closeMs": 300}


def command_id() -> str:
    return f"mv-{uuid.uuid4()}"


def test_a_sqlite_room_moves_into_postgresql_whole_and_goes_on_from_there(tmp_path, cluster):
    agents = fake_agents(tmp_path, "kimi")
    room = GroupXServer(
        tmp_path, {"agents": agents, "timeouts": TIMEOUTS, "storage": {"path": ".groupx/groupx.db"}}
    ).start()
    accepted = send(room, "agent:kimi", "hello before the move")
    assert wait_terminal(room, accepted["turns"][0]["turnId"])["type"] == "turn.completed"
    memory = {
        "clientCommandId": command_id(),
        "scope": {"type": "room", "id": "room:main"},
        "kind": "fact",
        "content": "The release is on Friday",
    }
    remembered = room.post("/api/memory", memory)
    assert remembered.status_code == 201
    assert (
        room.post(
            "/api/identity",
            {
                "clientCommandId": command_id(),
                "subjectActorId": "agent:kimi",
                "kind": "instruction",
                "content": "Kimi answers briefly",
            },
        ).status_code
        == 201
    )
    before = room.events()
    turns_before = db_rows(room, "SELECT turn_id, status FROM turns_turn ORDER BY turn_id")
    room.stop()

    target = create_database(cluster, f"moved_{uuid.uuid4().hex[:12]}")
    moved = room.manage("move_to_postgresql", target, check=False)
    assert moved.returncode == 0, moved.stderr
    assert f"log: {len(before)} events, sha256 " in moved.stdout and "rooms_event:" in moved.stdout

    room.write_config({"agents": agents, "timeouts": TIMEOUTS, "storage": {"url": target}})
    room.start()
    after = room.events()  # the moved log, then what the restart itself wrote (the agent's session)
    assert [(e["seq"], e["eventId"], e["body"]) for e in after[: len(before)]] == [
        (e["seq"], e["eventId"], e["body"]) for e in before
    ]
    assert db_rows(room, "SELECT turn_id, status FROM turns_turn ORDER BY turn_id") == turns_before
    assert db_rows(room, "SELECT COUNT(*) AS n FROM turns_turnattempt")[0]["n"] >= 1
    assert db_rows(room, "SELECT COUNT(*) AS n FROM agents_deliverycursor")[0]["n"] >= 1
    found = room.get("/api/memory", params={"query": "release"}).json()["items"]
    assert [m["content"] for m in found] == ["The release is on Friday"]
    assert [
        r["content"] for r in room.get("/api/identity", params={"subjectActorId": "agent:kimi"}).json()["items"]
    ] == ["Kimi answers briefly"]
    replay = room.post("/api/memory", memory)  # the receipt moved: the retry replays, it writes nothing new
    assert replay.status_code == 201 and replay.json() == remembered.json()
    assert len(room.get("/api/memory", params={"query": "release"}).json()["items"]) == 1

    again = send(room, "agent:kimi", "hello after the move")
    assert wait_terminal(room, again["turns"][0]["turnId"])["type"] == "turn.completed"
    seqs = [e["seq"] for e in room.events()]
    assert seqs == list(range(1, len(seqs) + 1))  # gap-free on from the moved log
    room.stop()

    room.write_config({"agents": agents, "timeouts": TIMEOUTS, "storage": {"path": ".groupx/groupx.db"}})
    refused = room.manage("move_to_postgresql", target, check=False)
    assert refused.returncode != 0 and "the target database is not empty" in refused.stderr
    assert "rooms_event" in refused.stderr


def test_a_move_to_a_database_beyond_loopback_is_refused(tmp_path):
    room = GroupXServer(tmp_path, {"agents": fake_agents(tmp_path, "kimi"), "storage": {"path": ".groupx/groupx.db"}})
    refused = room.manage("move_to_postgresql", "postgresql://db.example.com/groupx", check=False)
    assert refused.returncode != 0 and "the host must be loopback" in refused.stderr

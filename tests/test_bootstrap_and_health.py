"""GET /api/bootstrap and GET /api/health (PROTOCOL §10.1, §10.6)."""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, datetime

from tests.server import REPO, hanging_agent
from tests.sse import SseClient


def post(server, to=("agent:sleeper",)) -> dict:
    body = {"clientCommandId": str(uuid.uuid4()), "to": list(to), "content": "hello"}
    return server.post("/api/messages", body).json()


def test_bootstrap_is_a_snapshot_with_a_cursor_for_the_stream(make_server):
    server = make_server()
    accepted = post(server)

    snapshot = server.get("/api/bootstrap").json()

    assert snapshot["schema"] == "groupx.bootstrap/0.1"
    assert snapshot["room"] == {"roomId": "room:main", "throughSeq": snapshot["recentEvents"][-1]["seq"]}
    mine = [e for e in snapshot["recentEvents"] if e["correlationId"] == accepted["correlationId"]]
    assert [e["type"] for e in mine] == ["message.created", "turn.queued"]
    assert snapshot["activeTurns"] == [
        {
            "turnId": accepted["turns"][0]["turnId"],
            "targetActorId": "agent:sleeper",
            "status": "queued",
            "sourceEventId": accepted["messageEventId"],
        }
    ]
    card = snapshot["agents"][0]
    assert card["actorId"] == "agent:sleeper"
    assert card["capabilities"]["access"] == "unrestricted"
    assert "binding" not in str(snapshot).lower()

    # the cursor misses nothing committed after the snapshot
    later = post(server)
    with SseClient(server.base_url, after_seq=snapshot["room"]["throughSeq"]) as stream:
        first = stream.wait_for(lambda e: e.get("seq") is not None)
    assert first["eventId"] == later["messageEventId"]


def test_bootstrap_stays_bounded_with_ten_thousand_events(make_server, tmp_path):
    server = make_server()
    server.stop()
    now = datetime.now(UTC).isoformat()
    db = sqlite3.connect(server.workdir / ".groupx" / "groupx.db")
    db.executemany(
        "INSERT INTO rooms_event (event_id, room_id, event_type, actor_id, actor_kind, actor_display_name,"
        " targets, correlation_id, root_correlation_id, occurred_at, body) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        [
            (
                f"evt_seed{i}",
                "room:main",
                "message.created",
                "user:web",
                "user",
                "You",
                "[]",
                f"corr_{i}",
                f"corr_{i}",
                now,
                '{"content": "seed"}',
            )
            for i in range(10_000)
        ],
    )
    db.commit()
    db.close()
    server.start()

    snapshot = server.get("/api/bootstrap").json()

    head = snapshot["room"]["throughSeq"]
    assert head > 10_000
    assert len(snapshot["recentEvents"]) == 100
    assert [e["seq"] for e in snapshot["recentEvents"]] == list(range(head - 99, head + 1))
    assert snapshot["previousPage"] == {"beforeSeq": head - 99}


def test_health_reports_identity_readiness_and_agents(make_server):
    server = make_server()

    response = server.get("/api/health")

    assert response.status_code == 200
    health = response.json()
    assert health["service"] == "groupx" and health["protocol"] == "groupx.runtime/1"
    assert health["readiness"] == "ready"
    assert len(health["runtimeKey"]) == 64 and len(health["runtimeScopeKey"]) == 64
    assert all(c in "0123456789abcdef" for c in health["runtimeKey"] + health["runtimeScopeKey"])
    assert health["store"]["journalMode"] == "wal"
    assert health["access"] == "unrestricted" and health["transport"] == "structured"
    assert [a["actorId"] for a in health["agents"]] == ["agent:sleeper"]
    assert {"actorId", "adapterId", "driver", "status"} <= set(health["agents"][0])


def test_the_scope_key_survives_a_roster_change_and_the_runtime_key_does_not(make_server, tmp_path):
    server = make_server()
    before = server.get("/api/health").json()
    server.stop()
    config = {
        "agents": {"sleeper": hanging_agent(server.workdir), "other": hanging_agent(server.workdir, "other")},
        "timeouts": {"handshakeMs": 600000, "closeMs": 300},
    }
    server.write_config(config)
    server.start()

    after = server.get("/api/health").json()

    assert after["runtimeScopeKey"] == before["runtimeScopeKey"]
    assert after["runtimeKey"] != before["runtimeKey"]
    assert [a["actorId"] for a in after["agents"]] == ["agent:sleeper", "agent:other"]  # config order


def test_the_release_is_in_health_bootstrap_and_the_page(make_server):
    import tomllib

    release = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    server = make_server()
    assert server.get("/api/health").json()["version"] == release
    assert server.get("/api/bootstrap").json()["version"] == release
    assert f'<span id="groupx-version" title="GroupX release">v{release}</span>' in server.get("/").text

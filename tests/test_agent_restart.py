"""Restarting one agent's CLI (FEATURES §3; docs/DECISIONS.md D41).

A real server runs fake CLIs over their real wires; what the server did is read from the durable
events (SSE), the fakes' wire logs and, read-only, the database.
"""

from __future__ import annotations

import uuid

import pytest

from tests.agents import admin_session, csrf, db_rows, fake_agents, send, turn_events, wait_terminal, wire
from tests.server import wait_until
from tests.sse import SseClient


def command_id() -> str:
    return f"r-{uuid.uuid4()}"


def ready(server, *actors: str) -> None:
    wait_until(
        lambda: (
            {a["actorId"] for a in server.get("/api/health").json()["agents"] if a["status"] == "ready"} >= set(actors)
        ),
        timeout=20,
        message="agents ready",
    )


def session_events(server, actor_id: str, after_seq: int = 0) -> list[dict]:
    return [
        e for e in server.events(after_seq) if e["type"].startswith("session.") and e["actor"]["actorId"] == actor_id
    ]


def test_a_restart_interrupts_the_running_turn_keeps_its_partial_text_and_runs_the_queued_one_on_a_new_instance(
    make_server, tmp_path
):
    room = make_server(fake_agents(tmp_path, "kimi"))
    ready(room, "agent:kimi")
    first = send(room, "agent:kimi", "[[fake: reply text=warm-up]] hello")["turns"][0]["turnId"]
    assert wait_terminal(room, first)["type"] == "turn.completed"  # the native session now has history
    with SseClient(room.base_url, after_seq=room.events()[-1]["seq"]) as stream:
        running = send(room, "agent:kimi", "[[fake: reply text=said-before-restart; hang emit_first=0]]")["turns"][0][
            "turnId"
        ]
        stream.wait_for(
            lambda e: e["type"] == "turn.content.delta" and e["body"]["turnId"] == running,
            message="the running Turn's first words",
        )
    queued = send(room, "agent:kimi", "[[fake: reply text=after-restart]] next")["turns"][0]["turnId"]
    before = room.events()[-1]["seq"]

    response = room.post("/api/agents/agent:kimi/restart", {"clientCommandId": (restart_id := command_id())})

    assert response.status_code == 202, response.text
    previous = response.json()["previousInstanceId"]
    assert response.json() == {"actorId": "agent:kimi", "accepted": True, "previousInstanceId": previous}
    interrupted = wait_terminal(room, running)
    assert interrupted["type"] == "turn.interrupted"
    assert interrupted["body"]["errorCode"] == "TURN_INTERRUPTED" and interrupted["body"]["reason"] == "restart"
    turn_row = db_rows(room, "SELECT partial_text FROM turns_turn WHERE turn_id = ?", running)[0]
    assert turn_row["partial_text"] == "said-before-restart"
    assert wait_terminal(room, queued)["type"] == "turn.completed"
    started = next(e for e in turn_events(room, queued) if e["type"] == "turn.started")
    assert started["actor"]["instanceId"] != previous

    lineage = [
        (e["type"], e["actor"].get("instanceId"), e["body"].get("reason"))
        for e in session_events(room, "agent:kimi", before)
    ]
    new_instance = started["actor"]["instanceId"]
    assert lineage == [
        ("session.stopped", previous, "restart"),
        ("session.starting", None, None),
        ("session.resumed", new_instance, None),
    ]
    # A restart resumes the agent's native session (only a native reset forgets it), and the
    # prompt of the interrupted Turn was never sent again.
    starts = wire(room, "kimi", kind="start")
    assert len(starts) == 2
    loads = [r["msg"] for r in wire(room, "kimi", kind="in") if r["msg"].get("method") == "session/load"]
    news = [r for r in wire(room, "kimi", kind="out") if "sessionId" in (r["msg"].get("result") or {})]
    assert [load["params"]["sessionId"] for load in loads] == [news[0]["msg"]["result"]["sessionId"]]
    hang_prompts = [
        r for r in wire(room, "kimi", kind="in") if "said-before-restart; hang emit_first=0" in str(r["msg"])
    ]
    assert len(hang_prompts) == 1

    replay = room.post("/api/agents/agent:kimi/restart", {"clientCommandId": restart_id})
    assert replay.status_code == 202 and replay.json() == response.json()
    after = send(room, "agent:kimi", "[[fake: reply text=still-here]] again")["turns"][0]["turnId"]
    assert wait_terminal(room, after)["type"] == "turn.completed"
    assert [e["type"] for e in session_events(room, "agent:kimi", before)].count("session.stopped") == 1
    assert len(wire(room, "kimi", kind="start")) == 2


@pytest.mark.parametrize("flavor", ["codex", "claude"])
def test_a_restart_mid_turn_works_the_same_on_the_codex_and_claude_wires(make_server, tmp_path, flavor):
    room = make_server(fake_agents(tmp_path, flavor))
    actor_id = f"agent:{flavor}"
    ready(room, actor_id)
    with SseClient(room.base_url, after_seq=room.events()[-1]["seq"]) as stream:
        running = send(room, actor_id, "[[fake: reply text=half-way; hang emit_first=0]]")["turns"][0]["turnId"]
        stream.wait_for(
            lambda e: e["type"] == "turn.content.delta" and e["body"]["turnId"] == running,
            message="the running Turn's first words",
        )
    queued = send(room, actor_id, "[[fake: reply text=next-one]] next")["turns"][0]["turnId"]

    response = room.post(f"/api/agents/{actor_id}/restart", {"clientCommandId": command_id()})

    assert response.status_code == 202, response.text
    assert wait_terminal(room, running)["body"]["errorCode"] == "TURN_INTERRUPTED"
    assert (
        db_rows(room, "SELECT partial_text FROM turns_turn WHERE turn_id = ?", running)[0]["partial_text"] == "half-way"
    )
    assert wait_terminal(room, queued)["type"] == "turn.completed"
    started = next(e for e in turn_events(room, queued) if e["type"] == "turn.started")
    assert started["actor"]["instanceId"] != response.json()["previousInstanceId"]


def test_restarting_an_idle_agent_starts_its_new_instance_at_once(make_server, tmp_path):
    room = make_server(fake_agents(tmp_path, "codex"))
    ready(room, "agent:codex")
    before = room.events()[-1]["seq"]

    response = room.post("/api/agents/agent:codex/restart", {"clientCommandId": command_id()})

    assert response.status_code == 202, response.text
    previous = response.json()["previousInstanceId"]
    lineage = wait_until(
        lambda: (
            (found := session_events(room, "agent:codex", before)) and found[-1]["type"] == "session.ready" and found
        ),
        timeout=20,
        message="the new instance ready without any Turn",
    )
    assert [e["type"] for e in lineage] == ["session.stopped", "session.starting", "session.ready"]
    assert lineage[0]["actor"]["instanceId"] == previous and lineage[-1]["actor"]["instanceId"] != previous
    old = db_rows(room, "SELECT status, process_ended_at FROM agents_agentinstance WHERE instance_id = ?", previous)
    assert old[0]["status"] == "stopped" and old[0]["process_ended_at"] is not None


def test_a_restart_of_an_unknown_or_disabled_agent_or_with_a_bad_body_is_refused_and_writes_nothing(room):
    before = room.events()[-1]["seq"] if room.events() else 0
    reused = command_id()

    unknown = room.post("/api/agents/agent:nobody/restart", {"clientCommandId": reused})
    disabled = room.post("/api/agents/agent:off/restart", {"clientCommandId": reused})
    not_an_agent = room.post("/api/agents/user:web/restart", {"clientCommandId": reused})
    bad_bodies = [
        room.post("/api/agents/agent:alpha/restart", body)
        for body in ({}, {"clientCommandId": reused, "from": "user:web"}, {"clientCommandId": reused, "x": 1})
    ]

    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "UNKNOWN_ACTOR")
    assert (disabled.status_code, disabled.json()["error"]["code"]) == (404, "UNKNOWN_TARGET")
    assert (not_an_agent.status_code, not_an_agent.json()["error"]["code"]) == (404, "UNKNOWN_ACTOR")
    assert [(r.status_code, r.json()["error"]["code"]) for r in bad_bodies] == [
        (400, "INVALID_ENVELOPE"),
        (400, "SENDER_FIELD_FORBIDDEN"),
        (400, "INVALID_ENVELOPE"),
    ]
    assert room.events(before) == []
    assert db_rows(room, "SELECT * FROM rooms_clientcommand WHERE client_command_id = ?", reused) == []


def test_the_admin_restarts_an_agent_through_the_same_command(make_server, tmp_path):
    room = make_server(fake_agents(tmp_path, "hermes"))
    ready(room, "agent:hermes")
    before = room.events()[-1]["seq"]
    with admin_session(room) as browser:
        listing = browser.get("/admin/agents/actor/")
        done = browser.post(
            "/admin/agents/actor/",
            data={
                "csrfmiddlewaretoken": csrf(listing.text),
                "action": "restart_agents",
                "_selected_action": ["agent:hermes", "agent:codex"],
                "index": "0",
            },
        )

    assert "Restarting agent:hermes" in done.text and "UNKNOWN_TARGET agent:codex is not running" in done.text
    lineage = wait_until(
        lambda: (
            (found := session_events(room, "agent:hermes", before))
            and found[-1]["type"] in ("session.ready", "session.resumed")
            and found
        ),
        timeout=20,
        message="hermes on a new instance",
    )
    assert lineage[0]["type"] == "session.stopped" and lineage[0]["body"]["reason"] == "restart"

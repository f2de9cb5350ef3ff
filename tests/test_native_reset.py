"""A context reset that also resets the CLIs' own sessions (FEATURES §14;
docs/DECISIONS.md D41).

Proven from what each fake CLI received: after ``resetNativeSessions: true`` every agent opens a
new native session (ACP ``session/new``, Codex ``thread/start``, Claude ``--session-id``) and never
resumes the old one (``session/load``, ``thread/resume``, ``--resume``), whose id stays recorded.
"""

from __future__ import annotations

import uuid

from tests.agents import db_rows, fake_agents, send, wait_terminal, wire
from tests.server import wait_until

FAMILIES = ("kimi", "codex", "claude")


def ready(server, *actors: str) -> None:
    wait_until(
        lambda: (
            {a["actorId"] for a in server.get("/api/health").json()["agents"] if a["status"] == "ready"} >= set(actors)
        ),
        timeout=30,
        message="agents ready",
    )


def completed(server, agent: str, text: str) -> None:
    turn_id = send(server, f"agent:{agent}", f"[[fake: reply text={text}]] {text}")["turns"][0]["turnId"]
    assert wait_terminal(server, turn_id)["type"] == "turn.completed"


def native_ids(server, actor_id: str) -> list[str]:
    """The native session of each of the agent's bindings, oldest first (closed ones included)."""
    return [
        row["native_session_id"]
        for row in db_rows(
            server,
            "SELECT native_session_id FROM agents_sessionbinding WHERE actor_id = ? AND native_session_id IS NOT"
            " NULL ORDER BY created_at",
            actor_id,
        )
    ]


def opened(server, flavor: str) -> dict[str, list[str]]:
    """What the fake was asked to open: new sessions and resumed ones, by native id, in order."""
    inbound = wire(server, flavor, kind="in")
    if flavor == "claude":
        argvs = [r["argv"] for r in wire(server, flavor, kind="start")]
        pick = lambda flag: [argv[argv.index(flag) + 1] for argv in argvs if flag in argv]  # noqa: E731
        return {"new": pick("--session-id"), "resumed": pick("--resume")}
    new_method, resume_method, key = (
        ("thread/start", "thread/resume", "threadId")
        if flavor == "codex"
        else ("session/new", "session/load", "sessionId")
    )
    # Request ids start again in every process: an answer is matched by (process, id).
    answers = {(r["pid"], r["msg"].get("id")): r["msg"].get("result") or {} for r in wire(server, flavor, kind="out")}
    new_ids = [
        (answer := answers[r["pid"], r["msg"]["id"]]).get(key) or answer["thread"]["id"]
        for r in inbound
        if r["msg"].get("method") == new_method
    ]
    return {
        "new": new_ids,
        "resumed": [r["msg"]["params"][key] for r in inbound if r["msg"].get("method") == resume_method],
    }


def test_a_native_reset_starts_every_agent_on_a_fresh_native_session_and_never_resumes_the_old_one(
    make_server, tmp_path
):
    room = make_server(fake_agents(tmp_path, *FAMILIES))
    ready(room, *(f"agent:{a}" for a in FAMILIES))
    for agent in FAMILIES:
        completed(room, agent, f"before-{agent}")
    old = {agent: native_ids(room, f"agent:{agent}")[-1] for agent in FAMILIES}

    reset = room.post("/api/context/reset", {"clientCommandId": f"n-{uuid.uuid4()}", "resetNativeSessions": True})

    assert reset.status_code == 200, reset.text
    assert reset.json()["reset"] is True and reset.json()["resetNativeSessions"] is True
    event = [e for e in room.events() if e["type"] == "context.reset"][-1]
    assert event["body"]["resetNativeSessions"] is True and event["provenance"]["sourceKind"] == "web"
    # Idle agents close their session at once and start a fresh one, before any new Turn.
    renewed = wait_until(
        lambda: (
            (found := [e for e in room.events(event["seq"]) if e["type"] in ("session.stopped", "session.ready")])
            and len(found) == 2 * len(FAMILIES)
            and found
        ),
        timeout=30,
        message="every agent's session renewed",
    )
    assert {e["body"].get("reason") for e in renewed if e["type"] == "session.stopped"} == {"context_reset"}
    for agent in FAMILIES:
        completed(room, agent, f"after-{agent}")

    for agent in FAMILIES:
        seen, recorded = opened(room, agent), native_ids(room, f"agent:{agent}")
        assert seen["resumed"] == [], agent
        # Two native sessions were opened, the old one and a fresh one, which the new Turn used;
        # the old id stays recorded on its (now closed) binding.
        assert sorted(seen["new"]) == sorted([old[agent], recorded[-1]]) and recorded[-1] != old[agent], agent
        assert old[agent] in recorded, agent


def test_a_native_reset_from_the_operator_command_reaches_the_running_server_before_the_next_turn(
    make_server, tmp_path
):
    room = make_server(fake_agents(tmp_path, "claude"))
    ready(room, "agent:claude")
    completed(room, "claude", "before")
    old = native_ids(room, "agent:claude")[-1]

    result = room.manage("reset_context", "--native")

    assert "fresh native session" in result.stdout
    event = [e for e in room.events() if e["type"] == "context.reset"][-1]
    assert event["body"]["resetNativeSessions"] is True and event["provenance"]["sourceKind"] == "operator"
    completed(room, "claude", "after")
    seen, fresh = opened(room, "claude"), native_ids(room, "agent:claude")[-1]
    assert seen["resumed"] == [] and sorted(seen["new"]) == sorted([old, fresh]) and fresh != old


def test_after_a_native_reset_a_server_restart_does_not_resume_the_sessions_born_before_it(make_server, tmp_path):
    room = make_server(fake_agents(tmp_path, "codex"))
    ready(room, "agent:codex")
    completed(room, "codex", "before")
    old = native_ids(room, "agent:codex")[-1]
    room.manage("reset_context", "--native")  # the running server only learns of it before its next Turn

    room.restart()
    completed(room, "codex", "after")

    seen, fresh = opened(room, "codex"), native_ids(room, "agent:codex")[-1]
    assert seen["resumed"] == [] and sorted(seen["new"]) == sorted([old, fresh]) and fresh != old

"""GroupX restarts and the next Turn resumes the SAME native session of each real CLI (docs/CONFORMANCE.md).

Codex resumes with ``thread/resume``, Claude Code with ``--resume <session id>`` and Hermes with
ACP ``session/load``. The proof: GroupX reports ``session.resumed``; the new binding holds the old
native session id; the wiretap shows the relaunched CLI was asked (and agreed) to resume that id;
and the model receives the first Turn's exchange as native history (an assistant message, not
just room history quoted in the Context Packet).
"""

from __future__ import annotations

import json
import time

import pytest

from tests.agents import db_rows
from tests.realcli import harness
from tests.realcli.harness import DRIVERS, record, seconds_of


def native_session(server, actor_id: str) -> str | None:
    rows = db_rows(
        server,
        "SELECT native_session_id FROM agents_sessionbinding WHERE actor_id = ? AND status = "
        "'active' AND native_session_id IS NOT NULL ORDER BY created_at DESC",
        actor_id,
    )
    return rows[0]["native_session_id"] if rows else None


@pytest.fixture(scope="module")
def restarted(tmp_path_factory, mock, real_clis):
    """A room whose agents each answered one Turn, then a clean stop and start of GroupX."""
    root = tmp_path_factory.mktemp("restart")
    agents = [harness.make_agent(root, driver, driver, mock) for driver in DRIVERS]
    server = harness.start_room(root / "groupx", agents)
    room = harness.Room(server, mock, {a.agent_id: a for a in agents})
    keys = {driver: f"R1{driver}{time.monotonic_ns()}" for driver in DRIVERS}
    for driver, key in keys.items():
        mock.script({"when": key, "steps": [{"text": f"first answer {key}"}]})
        assert room.turn(f"agent:{driver}", f"Remember this {key}").terminal["type"] == "turn.completed"
    before = {driver: native_session(server, f"agent:{driver}") for driver in DRIVERS}
    head = room.head()
    server.stop()
    server.start(timeout=60)
    harness.wait_agents_ready(server, list(DRIVERS))
    yield {"room": room, "keys": keys, "before": before, "head": head}
    server.stop()


@pytest.mark.parametrize("driver", DRIVERS)
def test_after_a_restart_the_next_turn_resumes_the_same_native_session(restarted, driver):
    room, first_key = restarted["room"], restarted["keys"][driver]
    actor = f"agent:{driver}"
    sessions = [
        e
        for e in room.server.events(after_seq=restarted["head"])
        if e["type"].startswith("session.") and e["actor"]["actorId"] == actor
    ]
    kinds = [e["type"] for e in sessions]
    assert "session.resumed" in kinds and "session.failed" not in kinds, sessions
    resumed = next(e for e in sessions if e["type"] == "session.resumed")
    assert resumed["body"]["continuity"] == "resumed" and resumed["body"]["mcp"] == "verified", resumed
    assert restarted["before"][driver] and native_session(room.server, actor) == restarted["before"][driver]
    assert resumed_natively(room.agents[driver].launches()[-1], driver) == restarted["before"][driver]

    key = f"R2{driver}{time.monotonic_ns()}"
    room.mock.script({"when": key, "steps": [{"text": f"second answer {key}"}]})
    run = room.turn(actor, f"What did I ask before? {key}")

    assert run.terminal["type"] == "turn.completed", run.terminal
    record("turn after restart (resumed)", driver, latency_s=round(run.latency, 3))
    starting = next(e for e in sessions if e["type"] == "session.starting")
    record(
        "session resume (spawn -> resumed)",
        driver,
        latency_s=round(seconds_of(resumed["occurredAt"]) - seconds_of(starting["occurredAt"]), 3),
    )
    request = room.mock.requests(rule=key)[0]
    history = native_history(request)
    assert f"first answer {first_key}" in history["assistant"], history
    assert first_key in history["user"]


def resumed_natively(wire: list[dict], driver: str) -> str | None:
    """The native session id the driver asked the relaunched CLI to resume, read off the real wire."""
    if driver == "claude":
        argv = wire[0]["argv"]
        return argv[argv.index("--resume") + 1] if "--resume" in argv else None
    method, field = {"codex": ("thread/resume", "threadId"), "hermes": ("session/load", "sessionId")}[driver]
    sent = [r["msg"] for r in wire if r["dir"] == "->" and r.get("msg", {}).get("method") == method]
    answered = {r["msg"].get("id") for r in wire if r["dir"] == "<-" and "result" in r.get("msg", {})}
    return sent[0]["params"][field] if sent and sent[0]["id"] in answered else None


def native_history(request: dict) -> dict[str, str]:
    """What the CLI replayed to the model before this Turn's prompt, by role."""
    body, out = request["body"], {"user": "", "assistant": ""}
    if request["api"] == "responses":
        items = [i for i in body["input"] if i.get("type", "message") == "message"]
    else:
        items = body["messages"]
    last_user = max(n for n, m in enumerate(items) if m.get("role") == "user")
    for message in items[:last_user]:
        if message.get("role") in out:
            out[message["role"]] += json.dumps(message.get("content"), ensure_ascii=False) + "\n"
    return out

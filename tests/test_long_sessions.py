"""Long native sessions resume, on every wire, through a real server and the fake CLIs.

A session of 1,000 Turns is grown in the fake's own store (``agents/fakes/seed_history.py``)
between two runs of the room, so the resume the room then makes is the real one: Codex
``thread/resume``, Claude Code ``--resume``, ACP ``session/load`` against a new fake process.
A resume that cannot succeed falls back to a fresh session and says why (``session.retrying``,
then ``session.ready`` with its reason), and the agent is never "ready" beside an error.
"""

from __future__ import annotations

import json
import shutil
import uuid

import pytest

from agents.fakes.seed_history import seed
from tests.agents import db_rows, fake_agents, send, wait_terminal, wire
from tests.server import wait_until
from tests.sse import SseClient

LONG = 1000
LINE_LIMIT = 1 << 20  # NATIVE_PROTOCOLS: one stdout line of a CLI is at most 1 MiB


def native_session(room, actor_id: str) -> str:
    rows = db_rows(
        room,
        "SELECT native_session_id FROM agents_sessionbinding WHERE actor_id = ? AND "
        "native_session_id IS NOT NULL ORDER BY last_ready_at DESC",
        actor_id,
    )
    return rows[0]["native_session_id"]


def session_events(room, actor_id: str, after_seq: int) -> list[dict]:
    return [e for e in room.events(after_seq) if e["type"].startswith("session.") and e["actor"]["actorId"] == actor_id]


def agent_health(room, actor_id: str) -> dict:
    return next(a for a in room.get("/api/health").json()["agents"] if a["actorId"] == actor_id)


@pytest.mark.parametrize("driver", ["codex", "claude", "kimi"])
def test_a_thousand_turn_session_is_resumed_after_a_restart_and_answers(make_server, tmp_path, driver):
    actor = f"agent:{driver}"
    room = make_server(fake_agents(tmp_path, driver))
    assert wait_terminal(room, send(room, actor, "remember kiwi")["turns"][0]["turnId"])["type"] == "turn.completed"
    session_id = native_session(room, actor)
    before = room.get("/api/bootstrap").json()["room"]["throughSeq"]
    room.stop()
    assert seed(str(room.workdir / "fake-state"), driver, session_id, LONG) == LONG + 1
    room.start()

    turn_id = send(room, actor, "what was it?")["turns"][0]["turnId"]
    assert wait_terminal(room, turn_id, timeout=60)["type"] == "turn.completed"
    started = [e for e in session_events(room, actor, before) if e["type"] in ("session.resumed", "session.ready")]
    assert [e["type"] for e in started] == ["session.resumed"], started
    assert started[0]["body"]["continuity"] == "resumed"
    assert native_session(room, actor) == session_id
    assert not agent_health(room, actor).get("lastError")

    if driver == "codex":
        # The whole thread, as thread/resume would hydrate it, no longer fits one line...
        stored = json.loads((room.workdir / "fake-state" / "codex" / f"{session_id}.jsonl").read_text())
        assert len(json.dumps({"turns": stored["turns"]})) > LINE_LIMIT
        # ...so the driver asks without it and reads the newest turn through the paginated call.
        resumes = [r["msg"] for r in wire(room, "codex", kind="in") if r["msg"].get("method") == "thread/resume"]
        assert resumes[-1]["params"]["excludeTurns"] is True
        pages = wire(room, "codex", kind="turns_list")
        assert pages and pages[-1]["returned"] == 1
    elif driver == "kimi":
        # ACP replays the history on session/load, one update a line; the driver waits it out.
        replayed = [
            r
            for r in wire(room, "kimi", kind="out")
            if r["msg"].get("method") == "session/update"
            and r["msg"]["params"]["update"]["sessionUpdate"] == "user_message_chunk"
        ]
        assert len(replayed) >= LONG
    else:
        starts = wire(room, "claude", kind="start")
        assert starts[-1]["argv"][starts[-1]["argv"].index("--resume") + 1] == session_id


def test_a_session_that_cannot_be_resumed_falls_back_to_a_fresh_one_and_says_why(make_server, tmp_path):
    room = make_server(fake_agents(tmp_path, "codex"))
    assert wait_terminal(room, send(room, "agent:codex", "hello")["turns"][0]["turnId"])["type"] == "turn.completed"
    lost = native_session(room, "agent:codex")
    shutil.rmtree(room.workdir / "fake-state" / "codex")  # the CLI's own store is gone (a wiped CODEX_HOME)
    head = room.get("/api/bootstrap").json()["room"]["throughSeq"]

    with SseClient(room.base_url, after_seq=head) as stream:
        response = room.post("/api/agents/agent:codex/restart", {"clientCommandId": f"r-{uuid.uuid4()}"})
        assert response.status_code == 202, response.text
        ready = stream.wait_for(
            lambda e: e["type"] == "session.ready" and e["actor"]["actorId"] == "agent:codex",
            timeout=30,
            message="session.ready",
        )
        retrying = [e for e in stream.transient if e["type"] == "session.retrying"]

    assert len(retrying) == 1, retrying
    assert retrying[0]["body"]["errorCode"] == "SESSION_NOT_AVAILABLE"
    assert "could not be resumed" in retrying[0]["body"]["reason"]
    assert ready["body"]["continuity"] == "new_session_after_resume_failure"
    assert (
        ready["body"]["resumeErrorCode"] == "SESSION_NOT_AVAILABLE"
        and "could not be resumed" in ready["body"]["reason"]
    )
    health = wait_until(
        lambda: (h := agent_health(room, "agent:codex"))["status"] == "ready" and h, timeout=10, message="codex ready"
    )
    assert not health.get("lastError"), health  # never "ready" beside an error
    assert native_session(room, "agent:codex") != lost
    assert wait_terminal(room, send(room, "agent:codex", "again")["turns"][0]["turnId"])["type"] == "turn.completed"


def test_a_start_that_keeps_failing_retries_with_backoff_then_fails_visibly(make_server, tmp_path):
    room = make_server(fake_agents(tmp_path, "codex"))
    assert wait_terminal(room, send(room, "agent:codex", "hello")["turns"][0]["turnId"])["type"] == "turn.completed"
    (tmp_path / "cwd-codex" / ".groupx-fake.json").write_text(json.dumps({"exit_on_start": {"code": 3}}))
    head = room.get("/api/bootstrap").json()["room"]["throughSeq"]

    with SseClient(room.base_url, after_seq=head) as stream:
        assert room.post("/api/agents/agent:codex/restart", {"clientCommandId": f"r-{uuid.uuid4()}"}).status_code == 202
        failed = stream.wait_for(lambda e: e["type"] == "session.failed", timeout=30, message="session.failed")
        retrying = [e["body"] for e in stream.transient if e["type"] == "session.retrying"]

    # The stored thread is tried once (and given up with its reason), then three fresh starts.
    assert [(b["attempt"], b["nextDelayMs"], "reason" in b) for b in retrying] == [
        (1, 0, True),
        (1, 400, False),
        (2, 800, False),
    ]
    assert all(b["errorCode"] == "ADAPTER_START_FAILED" and b["maxAttempts"] == 3 for b in retrying)
    assert failed["body"]["errorCode"] == "ADAPTER_START_FAILED" and failed["body"]["attempts"] == 3
    health = agent_health(room, "agent:codex")
    assert health["status"] != "ready" and health["lastError"]["code"] == "ADAPTER_START_FAILED"

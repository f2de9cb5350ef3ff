"""A long native thread of the real Codex and Claude Code resumes after a GroupX restart.

The thread is made long in bytes through the mock model: eight Turns whose answers are about
150 KB each, so Codex's full-history ``thread/resume`` answer would pass the 1 MiB stdout line
limit. GroupX must report ``session.resumed`` (not a fresh session after a resume failure), ask
Codex without its turns (``excludeTurns``), and the next Turn must run on the same native session.
"""

from __future__ import annotations

import time

import pytest

from tests.realcli import harness
from tests.realcli.test_real_restart import native_session, resumed_natively

LONG_DRIVERS = ("codex", "claude")
TURNS = 8
ANSWER_CHARS = 150_000


@pytest.mark.parametrize("driver", LONG_DRIVERS)
def test_a_thread_longer_than_one_stdout_line_resumes_after_a_restart(tmp_path, mock, real_clis, driver):
    agent = harness.make_agent(tmp_path, driver, driver, mock)
    server = harness.start_room(tmp_path / "groupx", [agent])
    room = harness.Room(server, mock, {agent.agent_id: agent})
    actor = f"agent:{driver}"
    try:
        for index in range(TURNS):
            key = f"L{index}{driver}{time.monotonic_ns()}"
            mock.script({"when": key, "steps": [{"text": f"{key} " + "long answer " * (ANSWER_CHARS // 12)}]})
            assert room.turn(actor, f"Turn {index}: {key}", timeout=180).terminal["type"] == "turn.completed"
        before = native_session(server, actor)
        head = room.head()
        server.stop()
        server.start(timeout=60)
        harness.wait_agents_ready(server, [driver])

        sessions = [
            e
            for e in server.events(after_seq=head)
            if e["type"].startswith("session.") and e["actor"]["actorId"] == actor
        ]
        started = [e for e in sessions if e["type"] in ("session.resumed", "session.ready")]
        assert [e["type"] for e in started] == ["session.resumed"], sessions
        assert native_session(server, actor) == before
        launch = agent.launches()[-1]
        assert resumed_natively(launch, driver) == before
        if driver == "codex":
            resume = next(r["msg"] for r in launch if r["dir"] == "->" and r["msg"].get("method") == "thread/resume")
            assert resume["params"]["excludeTurns"] is True

        key = f"L-after{driver}{time.monotonic_ns()}"
        mock.script({"when": key, "steps": [{"text": f"still here {key}"}]})
        assert room.turn(actor, f"And now? {key}", timeout=180).terminal["type"] == "turn.completed"
    finally:
        server.stop()

"""Health from the first request to the last (FEATURES §16, PROTOCOL §10.6): ``starting`` from the
first request of a fresh room in split mode's web process, answers all through the start of a
large room, a roster cap refused with a clear error, and an instance another one took the room from
says it was superseded (docs/DECISIONS.md D90-D92)."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from tests.groupx_cli import Foreground, cli_env, groupx, port_refuses, write_config
from tests.server import GroupXServer, free_port, hanging_agent, wait_until
from tests.test_system_errors import statuses

# A health request left unanswered this long counts as no answer: a room starting two hundred CLIs
# once held it ~20 s behind their start-up bursts (it answers in well under a second now).
UNANSWERED_SECONDS = 10


def every_health_answer_until_ready(port: int, process: Foreground, *, interval: float = 0.005) -> list[httpx.Response]:
    """Every answer of /api/health, asked again and again from the moment the port takes connections;
    a request left unanswered fails the test."""
    answers: list[httpx.Response] = []

    def ready() -> bool:
        if process.proc.poll() is not None:
            raise AssertionError(f"groupx exited:\n{process.output()}")
        try:
            response = httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=UNANSWERED_SECONDS)
        except httpx.ConnectError:
            return False  # not listening yet
        answers.append(response)
        return response.status_code == 200 and response.json()["readiness"] == "ready"

    wait_until(ready, timeout=120, interval=interval, message="readiness ready")
    return answers


@pytest.mark.parametrize("mode", ["embedded", "split"])
def test_a_fresh_room_answers_starting_from_its_first_health_request(tmp_path, mode):
    port = free_port()
    # Split mode's web process (a Redis channel layer named) migrates the fresh room itself, as the
    # embedded default does; no worker and no Redis are needed for what it answers meanwhile.
    extra = {"channelLayer": {"redisUrl": f"redis://127.0.0.1:{free_port()}/0"}} if mode == "split" else {}
    config = write_config(tmp_path, port, **extra)
    web = Foreground(tmp_path, "start", "--no-open", "--config", str(config))
    try:
        answers = every_health_answer_until_ready(port, web)

        assert [r.status_code for r in answers] == [200] * len(answers), [
            r.text for r in answers if r.status_code != 200
        ]
        assert {r.json()["readiness"] for r in answers} <= {"starting", "ready"}
        assert "Traceback" not in web.output()
    finally:
        web.terminate()


def test_a_roster_over_the_cap_is_refused_at_start_with_one_clear_line(tmp_path):
    port = free_port()
    agents = {f"a{n}": {"driver": "kimi", "cwd": "."} for n in range(257)}
    config = write_config(tmp_path, port, agents)

    result = groupx("start", "--no-open", "--config", str(config), workdir=tmp_path, env=cli_env(tmp_path))

    assert result.returncode != 0
    assert "257 agents are configured; a room holds at most 256" in result.stderr
    assert "Traceback" not in result.stderr
    assert port_refuses(port)


def test_an_instance_another_took_the_room_from_says_it_was_superseded(tmp_path):
    fast_beat = {"GROUPX_LEASE_HEARTBEAT_MS": "200"}
    timeouts = {"handshakeMs": 600000, "closeMs": 300}
    first = GroupXServer(
        tmp_path / "first", {"agents": {"sleeper": hanging_agent(tmp_path)}, "timeouts": timeouts}, env=fast_beat
    )
    store = first.workdir / ".groupx" / "groupx.db"
    second = GroupXServer(
        tmp_path / "second",
        {"agents": {"sleeper": hanging_agent(tmp_path)}, "timeouts": timeouts, "storage": {"path": str(store)}},
        env=fast_beat,
    )
    try:
        first.start()
        second.start()

        def superseded():
            body = first.get("/api/health").json()
            return body if body["readiness"] == "failed" else None

        health = wait_until(superseded, timeout=30, message="the first instance to notice")
        refused = first.post(
            "/api/messages", {"clientCommandId": f"t-{uuid.uuid4()}", "to": ["agent:sleeper"], "content": "hello"}
        )

        assert health["status"] == "degraded"
        assert health["superseded"]["by"]["pid"] == second.proc.pid
        assert "superseded" in health["superseded"]["message"] and "failed to start" not in json.dumps(health)
        assert refused.status_code == 503 and refused.json()["error"]["code"] == "SESSION_NOT_AVAILABLE"
        assert "superseded" in refused.json()["error"]["message"]
        assert second.get("/api/health").json()["status"] == "ok"
        lost = wait_until(
            lambda: [
                e
                for e in second.events()
                if e["type"] == "system.error" and e["body"]["condition"].startswith("lease.lost:")
            ],
            timeout=30,
            message="the lost lease made public",
        )
        assert lost[0]["body"]["code"] == "SESSION_NOT_AVAILABLE" and str(second.proc.pid) in lost[0]["body"]["message"]
        wait_until(
            lambda: statuses(second, lost[0]["body"]["condition"]) == ["active", "resolved"],
            timeout=30,
            message="the lost lease healed by the instance that runs the room",
        )
    finally:
        first.stop()
        second.stop()

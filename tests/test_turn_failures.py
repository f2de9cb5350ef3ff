"""How a Turn fails is the same on every driver (docs/DECISIONS.md D38), end to end
through a real server whose fake CLIs speak the real wires: one native event, one error code,
whichever CLI produced it.
"""

from __future__ import annotations

import json

import pytest

from tests.agents import fake_agents, send, turn_events, wait_terminal, wire
from tests.server import wait_until

DRIVERS = ["kimi", "codex", "claude"]  # one of each wire: ACP, Codex App Server, Claude stream-json


@pytest.fixture
def room(make_server, tmp_path):
    return make_server(fake_agents(tmp_path, *DRIVERS))


def fails(room, driver: str, content: str) -> dict:
    terminal = wait_terminal(room, send(room, f"agent:{driver}", content)["turns"][0]["turnId"])
    assert terminal["type"] == "turn.failed", terminal
    return terminal["body"]


def test_a_cli_that_exits_mid_turn_fails_it_with_protocol_invalid_message_on_every_driver(room):
    codes = {driver: fails(room, driver, "[[fake: crash code=7 after=delta]]")["errorCode"] for driver in DRIVERS}

    assert codes == dict.fromkeys(DRIVERS, "PROTOCOL_INVALID_MESSAGE")
    for driver in DRIVERS:  # the session is replaced (PROTOCOL §5) and the next Turn runs on it
        following = send(room, f"agent:{driver}", "back?")["turns"][0]["turnId"]
        assert wait_terminal(room, following)["type"] == "turn.completed"
        assert len(wire(room, driver, kind="start")) == 2


def test_a_model_error_fails_the_turn_with_turn_interrupted_on_every_driver_and_the_cli_lives_on(room):
    bodies = {driver: fails(room, driver, "[[fake: fail message=overloaded]]") for driver in DRIVERS}

    assert {driver: body["errorCode"] for driver, body in bodies.items()} == dict.fromkeys(DRIVERS, "TURN_INTERRUPTED")
    assert all("overloaded" in body["message"] for body in bodies.values())
    for driver in DRIVERS:  # the CLI answered in step: the same process takes the next Turn
        following = send(room, f"agent:{driver}", "again")["turns"][0]["turnId"]
        assert wait_terminal(room, following)["type"] == "turn.completed"
        assert len(wire(room, driver, kind="start")) == 1


def test_a_cli_silent_after_taking_the_prompt_fails_with_the_first_event_timeout_on_every_driver(make_server, tmp_path):
    room = make_server(
        fake_agents(tmp_path, *DRIVERS),
        timeouts={"handshakeMs": 600_000, "closeMs": 300, "firstEventMs": 1_000, "idleMs": 3_000},
    )

    codes = {driver: fails(room, driver, "[[fake: silent]]")["errorCode"] for driver in DRIVERS}

    assert codes == dict.fromkeys(DRIVERS, "TURN_FIRST_EVENT_TIMEOUT")


def test_an_acp_cli_that_names_another_agent_fails_the_queued_turn_without_retrying_it(make_server, tmp_path):
    room = make_server(fake_agents(tmp_path, "hermes", scenarios={"hermes": {"agent_info": {"name": "kimi-cli"}}}))
    failed = wait_until(
        lambda: [a for a in room.get("/api/health").json()["agents"] if a["status"] == "failed"],
        timeout=30,
        message="hermes failed to start",
    )[0]
    assert failed["lastError"]["code"] == "ADAPTER_START_FAILED"
    assert "kimi-cli" in failed["lastError"]["message"] and "hermes-agent" in failed["lastError"]["message"]

    body = fails(room, "hermes", "are you hermes?")

    assert body["errorCode"] == "ADAPTER_START_FAILED" and "kimi-cli" in body["message"]
    assert len(wire(room, "hermes", kind="start")) == 2  # one launch at start, one for the Turn: never retried


def agent_health(room, actor_id: str) -> dict:
    return next(a for a in room.get("/api/health").json()["agents"] if a["actorId"] == actor_id)


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_crash_mid_turn_stays_in_health_as_the_last_error_until_a_turn_completes(make_server, tmp_path, driver):
    room = make_server(fake_agents(tmp_path, driver))
    actor_id = f"agent:{driver}"
    fails(room, driver, "[[fake: crash code=7 after=delta]]")

    rebuilt = wait_until(
        lambda: (h := agent_health(room, actor_id))["status"] == "ready" and h.get("lastError") and h,
        timeout=30,
        message="the rebuilt session, with the crash as its last error",
    )
    assert rebuilt["lastError"]["code"] == "PROTOCOL_INVALID_MESSAGE"
    assert "exit code 7" in rebuilt["lastError"]["message"] and rebuilt["lastError"]["at"]
    assert room.get("/api/bootstrap").json()["agents"][0]["lastError"] == rebuilt["lastError"]

    assert wait_terminal(room, send(room, actor_id, "back?")["turns"][0]["turnId"])["type"] == "turn.completed"
    assert agent_health(room, actor_id).get("lastError") is None


def test_an_agent_whose_cli_dies_under_three_turns_in_a_row_is_degraded_until_a_turn_completes(make_server, tmp_path):
    room = make_server(fake_agents(tmp_path, "kimi"))
    for crash in range(1, 4):
        fails(room, "kimi", f"[[fake: crash code={crash} after=delta]]")
        rebuilt = wait_until(
            lambda: (
                (h := agent_health(room, "agent:kimi"))["nativeSessionAvailable"]
                and h["consecutiveFailures"] == crash  # noqa: B023  (waited on inside this iteration)
                and h
            ),
            timeout=30,
            message=f"the session rebuilt after crash {crash}",
        )
        assert rebuilt["status"] == ("degraded" if crash == 3 else "ready"), rebuilt
    assert room.get("/api/health").json()["status"] == "degraded"

    assert wait_terminal(room, send(room, "agent:kimi", "back?")["turns"][0]["turnId"])["type"] == "turn.completed"
    back = agent_health(room, "agent:kimi")
    assert (back["status"], back["consecutiveFailures"], back.get("lastError")) == ("ready", 0, None)


@pytest.mark.parametrize("change", ["disabled", "removed"])
def test_turns_queued_for_an_agent_gone_from_the_config_fail_visibly_when_groupx_restarts(
    make_server, tmp_path, change
):
    room = make_server(fake_agents(tmp_path, "kimi", "grok"))
    running = send(room, "agent:kimi", "[[fake: hang]]")["turns"][0]["turnId"]
    waiting = send(room, "agent:kimi", "still queued")["turns"][0]["turnId"]
    wait_until(
        lambda: any(e["type"] == "turn.started" for e in turn_events(room, running)),
        timeout=20,
        message="the first Turn running",
    )
    room.stop()
    config = json.loads(room.config_path.read_text())
    if change == "disabled":
        config["agents"]["kimi"]["enabled"] = False
    else:
        del config["agents"]["kimi"]
    room.write_config(config)
    room.start()

    terminal = wait_terminal(room, waiting)

    assert terminal["type"] == "turn.failed" and terminal["body"]["errorCode"] == "UNKNOWN_TARGET"
    assert "agent:kimi" in terminal["body"]["message"]
    assert wait_terminal(room, running)["type"] == "turn.interrupted"
    assert room.get("/api/health").json()["queuedTurns"] == 0
    assert room.get("/api/bootstrap").json()["activeTurns"] == []
    assert (
        wait_terminal(room, send(room, "agent:grok", "still here?")["turns"][0]["turnId"])["type"] == "turn.completed"
    )

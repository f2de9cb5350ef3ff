"""A hostile CLI cannot break the room (D23), end to end through a real server.

The fake CLIs are scripted to do what an attacker's CLI did: a lone UTF-16 surrogate in a text
delta, a flood of content without end, a closed stdin, an answer under a request id never sent.
Each fails (or repairs) only its own Turn, at once, and the next Turns of every agent run.
Timeouts are set far beyond any test, so a Turn that ends did so because the broker noticed,
never because a timer ran out.
"""

from __future__ import annotations

import pytest

from tests.agents import db_rows, fake_agents, response_of, send, turn_events, wait_terminal
from tests.server import peak_resident_bytes, wait_until

REPLY_LIMIT_CHARACTERS = 1_048_576  # docs/DECISIONS.md D23
# The server's own peak resident memory may grow by at most this much while one CLI floods it
# (D23 states the per-CLI bound, ~20 MiB for ACP; this leaves room for allocator slack).
FLOOD_MEMORY_HEADROOM_BYTES = 64 * 1024 * 1024
NEVER = {"handshakeMs": 600_000, "closeMs": 300, "firstEventMs": 600_000, "idleMs": 600_000}
TIMER_CODES = {"TURN_IDLE_TIMEOUT", "TURN_FIRST_EVENT_TIMEOUT"}


@pytest.fixture
def room(make_server, tmp_path):
    return make_server(fake_agents(tmp_path, "kimi", "codex", "claude"), timeouts=NEVER)


def turn_of(server, target: str, content: str) -> str:
    return send(server, target, content)["turns"][0]["turnId"]


def everyone_answers(server) -> None:
    accepted = send(server, "@all", "still there?")
    assert [wait_terminal(server, t["turnId"])["type"] for t in accepted["turns"]] == ["turn.completed"] * 3


def started_instance(server, turn_id: str) -> str:
    return next(e["actor"]["instanceId"] for e in turn_events(server, turn_id) if e["type"] == "turn.started")


@pytest.mark.parametrize("driver", ["kimi", "codex", "claude"])
def test_a_lone_surrogate_from_a_cli_is_repaired_recorded_and_the_room_goes_on(room, driver):
    turn_id = turn_of(room, f"agent:{driver}", "[[fake: surrogate]]")

    terminal = wait_terminal(room, turn_id)

    assert terminal["type"] == "turn.completed", terminal
    assert terminal["body"]["textRepaired"] >= 1  # per frame that carried it: Codex repeats its text
    assert response_of(room, terminal)["body"]["content"] == "before \ufffd after"
    replayed = room.events()  # /api/events?afterSeq=0, read up to the log's head
    assert terminal["eventId"] in {e["eventId"] for e in replayed}
    everyone_answers(room)
    assert "textRepaired" not in wait_terminal(room, turn_of(room, f"agent:{driver}", "again"))["body"]


@pytest.mark.parametrize("driver", ["kimi", "codex", "claude"])
def test_a_flooding_cli_ends_its_turn_at_the_reply_cap_within_the_memory_bound_and_the_next_turn_runs(room, driver):
    everyone_answers(room)  # every lane has run once: what follows is the flood's own cost
    before = peak_resident_bytes(room.proc.pid)

    # 200 chunks of 64 Ki characters: 12.5 Mi characters offered, 12 times the cap.
    turn_id = turn_of(room, f"agent:{driver}", "[[fake: flood chunk=65536 n=200]]")
    terminal = wait_terminal(room, turn_id, timeout=60)

    assert terminal["type"] == "turn.failed", terminal
    assert terminal["body"]["errorCode"] == "MESSAGE_TOO_LARGE"
    kept = db_rows(room, "SELECT partial_text FROM turns_turn WHERE turn_id = ?", turn_id)[0]["partial_text"]
    assert kept == "x" * REPLY_LIMIT_CHARACTERS
    assert peak_resident_bytes(room.proc.pid) - before < FLOOD_MEMORY_HEADROOM_BYTES
    assert wait_terminal(room, turn_of(room, f"agent:{driver}", "calm now?"))["type"] == "turn.completed"
    everyone_answers(room)


def test_flooding_reasoning_ends_the_turn_at_its_cap_too_and_the_next_turn_runs(room):
    turn_id = turn_of(room, "agent:kimi", "[[fake: flood kind=reasoning chunk=65536 n=40]]")

    terminal = wait_terminal(room, turn_id, timeout=60)

    assert terminal["type"] == "turn.failed", terminal
    assert terminal["body"]["errorCode"] == "MESSAGE_TOO_LARGE"
    reasoning = next(e for e in room.events() if e["eventId"] == terminal["body"]["reasoningEventId"])
    assert reasoning["body"]["content"] == "x" * REPLY_LIMIT_CHARACTERS
    assert wait_terminal(room, turn_of(room, "agent:kimi", "calm now?"))["type"] == "turn.completed"


def test_a_reply_of_exactly_the_cap_completes_whole(room):
    turn_id = turn_of(room, "agent:kimi", "[[fake: flood chunk=65536 n=16]]")  # 16 × 64 Ki = the cap

    terminal = wait_terminal(room, turn_id, timeout=60)

    assert terminal["type"] == "turn.completed", terminal
    assert response_of(room, terminal)["body"]["content"] == "x" * REPLY_LIMIT_CHARACTERS


@pytest.mark.parametrize("driver", ["kimi", "codex", "claude"])
def test_a_cli_that_closes_its_stdin_fails_its_turn_at_once_and_the_next_turn_runs(room, driver):
    turn_id = turn_of(room, f"agent:{driver}", "[[fake: close-stdin]]")

    terminal = wait_terminal(room, turn_id)

    assert terminal["type"] == "turn.failed", terminal
    assert terminal["body"]["errorCode"] == "PROTOCOL_INVALID_MESSAGE"  # a process gone, on every driver (D38)
    assert wait_terminal(room, turn_of(room, f"agent:{driver}", "back?"))["type"] == "turn.completed"
    everyone_answers(room)


@pytest.mark.parametrize("driver", ["kimi", "codex", "claude"])
def test_a_cli_that_closes_its_stdin_between_turns_is_replaced_before_the_next_turn(room, driver):
    first = wait_terminal(room, turn_of(room, f"agent:{driver}", "[[fake: reply text=bye; close-stdin after_turn]]"))
    assert first["type"] == "turn.completed"

    # Noticed while idle (the server says so in its log), so the dead session is replaced before
    # the next prompt instead of being found dead by it.
    wait_until(
        lambda: "closed its stdin and keeps running" in room.log(),
        timeout=20,
        message="the server to notice the closed stdin",
    )
    second = turn_of(room, f"agent:{driver}", "back?")
    assert wait_terminal(room, second)["type"] == "turn.completed"
    assert started_instance(room, second) != started_instance(room, first["body"]["turnId"])


@pytest.mark.parametrize("driver", ["kimi", "codex", "claude"])
def test_an_answer_under_a_request_id_never_sent_fails_the_turn_at_once_and_the_next_turn_runs(room, driver):
    turn_id = turn_of(room, f"agent:{driver}", "[[fake: wrong-id]]")

    terminal = wait_terminal(room, turn_id)

    assert terminal["type"] == "turn.failed", terminal
    assert terminal["body"]["errorCode"] == "PROTOCOL_INVALID_MESSAGE"
    assert terminal["body"]["errorCode"] not in TIMER_CODES
    assert wait_terminal(room, turn_of(room, f"agent:{driver}", "back?"))["type"] == "turn.completed"
    everyone_answers(room)

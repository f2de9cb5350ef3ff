"""The side chat with the room assistant (FEATURES §13, PROTOCOL §10.7): every REST rule with its
code, idempotency, failures stored as short replies, cancel. The brain is the fake Claude CLI over
its real stream-json wire; nothing of GroupX is mocked."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.agents import admin_session, db_rows, wire
from tests.assistant_room import assistant_config, assistant_room, directive, in_background, say
from tests.server import FAKES_BIN, hanging_agent, wait_until


@pytest.fixture(scope="module")
def side(tmp_path_factory):
    server = assistant_room(tmp_path_factory.mktemp("side"), "kimi")
    yield server
    server.stop()


def test_the_assistant_reports_its_name_and_that_it_is_ready(side):
    state = side.get("/api/assistant").json()
    assert state == {"enabled": True, "name": "房间助理", "status": "ready"}


def test_a_message_gets_the_brains_answer_and_both_rows_are_in_the_history(side):
    answer = say(side, "hello there", "side-hello")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["userMessage"]["content"] == "hello there"
    assert body["userMessage"]["clientCommandId"] == "side-hello"
    assert body["assistantMessage"]["role"] == "assistant"
    assert body["assistantMessage"]["content"].startswith("echo: ")
    assert body["status"] == "ready"
    history = side.get("/api/assistant/messages").json()["messages"]
    ids = [m["messageId"] for m in history]
    assert ids.index(body["userMessage"]["messageId"]) + 1 == ids.index(body["assistantMessage"]["messageId"])


def test_the_side_chat_never_writes_a_room_message_or_a_turn(side):
    say(side, "nothing for the room")
    assert not [e for e in side.events() if e["type"] in ("message.created", "turn.queued")]


def test_the_same_command_id_replays_the_stored_reply_without_a_second_row(side):
    first = say(side, "once only", "side-once").json()
    again = say(side, "once only", "side-once").json()
    assert again["userMessage"] == first["userMessage"]
    assert again["assistantMessage"] == first["assistantMessage"]
    rows = db_rows(
        side,
        "SELECT role FROM assistant_conversation_messages WHERE client_command_id = ? "
        "OR reply_to_id IN (SELECT message_id FROM assistant_conversation_messages "
        "WHERE client_command_id = ?)",
        "side-once",
        "side-once",
    )
    assert sorted(r["role"] for r in rows) == ["assistant", "user"]


def test_the_same_command_id_with_other_content_is_a_conflict(side):
    say(side, "first words", "side-conflict")
    refused = say(side, "other words", "side-conflict")
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "CLIENT_COMMAND_CONFLICT"


@pytest.mark.parametrize("field", ["from", "actor", "provenance"])
def test_a_sender_field_is_refused_before_anything_else(side, field):
    refused = side.post(
        "/api/assistant/messages", {"clientCommandId": "x", "content": "hi", field: "user:web", "to": ["agent:kimi"]}
    )
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "SENDER_FIELD_FORBIDDEN"


@pytest.mark.parametrize(
    "field, value", [("to", ["agent:kimi"]), ("supervision", {"observers": ["agent:kimi"], "mode": "live_steer"})]
)
def test_routing_fields_are_an_invalid_envelope(side, field, value):
    refused = side.post("/api/assistant/messages", {"clientCommandId": "x", "content": "hi", field: value})
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "INVALID_ENVELOPE"


@pytest.mark.parametrize(
    "body",
    [
        {"content": "no id"},
        {"clientCommandId": "x"},
        {"clientCommandId": "x", "content": "  "},
        {"clientCommandId": "x", "content": "hi", "extra": 1},
    ],
)
def test_a_malformed_body_is_an_invalid_envelope_and_writes_nothing(side, body):
    before = len(side.get("/api/assistant/messages").json()["messages"])
    refused = side.post("/api/assistant/messages", body)
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "INVALID_ENVELOPE"
    assert len(side.get("/api/assistant/messages").json()["messages"]) == before


def test_content_over_the_limit_is_message_too_large(side):
    refused = side.post("/api/assistant/messages", {"clientCommandId": "big", "content": "x" * 131_073})
    assert refused.status_code == 413
    assert refused.json()["error"]["code"] == "MESSAGE_TOO_LARGE"


def test_a_brain_crash_is_stored_as_a_short_failure_and_the_next_message_is_answered(side):
    crashed = say(side, "[[fake: crash code=9]]").json()
    assert crashed["assistantMessage"]["outcome"] == "failed"
    assert crashed["assistantMessage"]["content"].startswith("The assistant could not answer")
    assert len(crashed["assistantMessage"]["content"]) <= 500
    wait_until(
        lambda: side.get("/api/assistant").json()["status"] == "ready", timeout=60, message="the brain restarted"
    )
    assert say(side, "are you back?").json()["assistantMessage"]["content"] == "echo: are you back?"


def _brain_busy(server) -> bool:
    return server.get("/api/assistant").json()["status"] == "busy"


def _prompts_holding(server, token: str) -> int:
    return sum(1 for record in wire(server, "claude", kind="in") if token in json.dumps(record.get("msg")))


def test_the_same_command_id_sent_while_answering_joins_the_run_in_flight(side):
    content = "[[fake: stream n=20 delay_ms=100]] join-token"
    first = in_background(lambda: say(side, content, "side-join"))
    wait_until(lambda: _brain_busy(side), timeout=60, message="the brain busy")
    second = say(side, content, "side-join").json()
    first = first().json()
    assert second["assistantMessage"] == first["assistantMessage"]
    assert _prompts_holding(side, "join-token") == 1


def test_cancel_stops_the_answer_and_stores_a_cancelled_reply(side):
    answer = in_background(lambda: say(side, "[[fake: hang]]", "side-cancel"))
    wait_until(lambda: _brain_busy(side), timeout=60, message="the brain busy")
    accepted = side.post("/api/assistant/cancel", {"clientCommandId": "side-cancel"})
    assert accepted.status_code == 200 and accepted.json() == {"accepted": True}
    reply = answer().json()["assistantMessage"]
    assert reply["outcome"] == "cancelled"
    assert side.post("/api/assistant/cancel", {"clientCommandId": "side-cancel"}).json() == {"accepted": False}
    wait_until(lambda: side.get("/api/assistant").json()["status"] == "ready", timeout=60, message="ready again")


def test_cancel_refuses_a_sender_field(side):
    refused = side.post("/api/assistant/cancel", {"clientCommandId": "x", "actor": "user:web"})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "SENDER_FIELD_FORBIDDEN"


def test_the_admin_shows_the_side_chat_read_only(side):
    say(side, "for the admin", "side-admin")
    with admin_session(side) as browser:
        listing = browser.get("/admin/assistant/assistantmessage/")
        adding = browser.get("/admin/assistant/assistantmessage/add/")
    assert listing.status_code == 200 and "for the admin" in listing.text and "echo: for the admin" in listing.text
    assert adding.status_code == 403


def test_a_user_row_left_without_a_reply_runs_the_brain_again_without_a_second_row(side):
    # Last in this module: the server is killed while the brain answers, which leaves the user
    # row alone; after the restart the same clientCommandId answers it.
    content = "[[fake: stream n=30 delay_ms=100]] lone-token"
    in_background(lambda: _swallow(lambda: say(side, content, "side-lone", timeout=30)))
    wait_until(
        lambda: db_rows(side, "SELECT 1 FROM assistant_conversation_messages WHERE client_command_id = ?", "side-lone"),
        timeout=60,
        message="the user row",
    )
    side.kill()
    assert not db_rows(
        side,
        "SELECT 1 FROM assistant_conversation_messages WHERE reply_to_id IN (SELECT message_id "
        "FROM assistant_conversation_messages WHERE client_command_id = ?)",
        "side-lone",
    )
    side.start(migrate=False)
    wait_until(lambda: side.get("/api/assistant").json()["status"] == "ready", timeout=60, message="the brain")
    answer = say(side, content, "side-lone").json()
    assert "part-30" in answer["assistantMessage"]["content"]
    rows = db_rows(
        side,
        "SELECT role FROM assistant_conversation_messages WHERE client_command_id = ? OR reply_to_id "
        "IN (SELECT message_id FROM assistant_conversation_messages WHERE client_command_id = ?)",
        "side-lone",
        "side-lone",
    )
    assert sorted(r["role"] for r in rows) == ["assistant", "user"]


def _swallow(fn):
    try:
        return fn()
    except httpx.HTTPError as error:  # the server is killed under this request on purpose
        return error


def test_a_disabled_assistant_is_not_available_but_a_bad_body_is_refused_first(room):
    assert room.get("/api/assistant").json()["status"] == "disabled"
    assert room.get("/api/assistant").json()["enabled"] is False
    refused = room.post("/api/assistant/messages", {"clientCommandId": "x", "content": "hi"})
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "SESSION_NOT_AVAILABLE"
    malformed = room.post("/api/assistant/messages", {"clientCommandId": "x", "content": "hi", "from": "me"})
    assert malformed.status_code == 400 and malformed.json()["error"]["code"] == "SENDER_FIELD_FORBIDDEN"


def test_an_assistant_enabled_by_a_save_is_not_available_until_a_restart_and_nothing_is_written(room):
    draft = room.get("/api/setup").json()["config"]
    draft["assistant"] = {
        "enabled": True,
        "name": "Helper",
        "extraInstructions": "",
        "brain": {"driver": "claude", "command": {"executable": str(FAKES_BIN / "claude")}, "cwd": str(room.workdir)},
    }
    assert room.post("/api/setup", {"config": draft}).status_code == 200
    assert room.get("/api/assistant").json()["status"] == "restart_required"
    refused = room.post("/api/assistant/messages", {"clientCommandId": "after-save", "content": "hi"})
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "SESSION_NOT_AVAILABLE"
    assert room.get("/api/assistant/messages").json()["messages"] == []


def test_an_assistant_still_starting_is_not_available(make_server, tmp_path):
    brain = hanging_agent(tmp_path, "brain")
    server = make_server(
        assistant={"enabled": True, "brain": {"driver": "claude", "command": brain["command"], "cwd": brain["cwd"]}}
    )
    assert server.get("/api/assistant").json()["status"] == "starting"
    refused = server.post("/api/assistant/messages", {"clientCommandId": "x", "content": "hi"})
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "SESSION_NOT_AVAILABLE"


@pytest.mark.parametrize("driver", ["codex", "kimi"])
def test_the_brain_can_be_another_driver_and_reaches_the_operator_tools(tmp_path, driver):
    server = assistant_room(tmp_path, "hermes", assistant=assistant_config(tmp_path, driver))
    try:
        answer = say(server, directive("roster")).json()
        assert "mcp:roster:ok:" in answer["assistantMessage"]["content"], answer
    finally:
        server.stop()


def test_a_brain_that_cannot_start_is_failed_and_each_message_gets_a_short_failure(make_server, tmp_path):
    server = make_server(
        assistant={
            "enabled": True,
            "brain": {"driver": "claude", "command": str(tmp_path / "gone"), "cwd": str(tmp_path)},
        }
    )
    wait_until(lambda: server.get("/api/assistant").json()["status"] == "failed", timeout=60, message="failed")
    assert "ADAPTER_NOT_FOUND" in server.get("/api/assistant").json()["detail"]
    answer = say(server, "anyone there?")
    assert answer.status_code == 200
    assert answer.json()["assistantMessage"]["outcome"] == "failed"
    assert answer.json()["assistantMessage"]["content"].startswith("The assistant could not answer (ADAPTER_NOT_FOUND)")

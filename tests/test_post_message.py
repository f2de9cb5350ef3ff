"""POST /api/messages against a real server (PROTOCOL §10.2, §14; FEATURES §5, §6.1)."""

from __future__ import annotations

import threading
import uuid

import httpx
import pytest


def command_id() -> str:
    return f"web-{uuid.uuid4()}"


def message(**fields) -> dict:
    return {"clientCommandId": command_id(), "to": ["agent:alpha"], "content": "hello", **fields}


def error_of(response: httpx.Response) -> dict:
    body = response.json()
    assert set(body) == {"error"}, body
    assert "Traceback" not in response.text
    return body["error"]


def count_events(room) -> int:
    return len(room.events())


def test_it_accepts_a_message_and_queues_one_turn_per_target(room):
    response = room.post("/api/messages", message(to=["agent:beta", "agent:alpha"]))

    assert response.status_code == 202
    body = response.json()
    assert body["messageEventId"].startswith("evt_") and body["correlationId"].startswith("corr_")
    assert [t["target"] for t in body["turns"]] == ["agent:alpha", "agent:beta"]
    assert all(t["status"] == "queued" and t["transport"] == "structured" for t in body["turns"])

    written = [e for e in room.events() if e["correlationId"] == body["correlationId"]]
    assert [e["type"] for e in written] == ["message.created", "turn.queued", "turn.queued"]
    created = written[0]
    assert created["actor"] == {"actorId": "user:web", "kind": "user", "displayName": "You"}
    assert created["to"] == ["agent:alpha", "agent:beta"]
    assert created["body"] == {"content": "hello"}
    assert created["provenance"]["sourceKind"] == "web"
    assert [e["body"]["turnId"] for e in written[1:]] == [t["turnId"] for t in body["turns"]]
    assert all(e["actor"]["actorId"] == "system:groupx" for e in written[1:])


def test_it_expands_at_all_to_every_enabled_agent(room):
    body = room.post("/api/messages", message(to=["@all"])).json()

    assert [t["target"] for t in body["turns"]] == ["agent:alpha", "agent:beta", "agent:gamma"]
    created = next(e for e in room.events() if e["eventId"] == body["messageEventId"])
    assert created["to"] == ["agent:alpha", "agent:beta", "agent:gamma"]


@pytest.mark.parametrize("field", ["from", "actor", "provenance", "sender", "eventId"])
def test_it_rejects_sender_fields_before_anything_else(room, field):
    before = count_events(room)
    # the body is invalid in other ways too: the sender field must still win
    response = room.post("/api/messages", {field: "agent:alpha", "to": "nonsense", "transport": "direct"})

    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "SENDER_FIELD_FORBIDDEN"
    assert error["details"]["forbiddenFields"] == [field]
    assert count_events(room) == before


@pytest.mark.parametrize("extra", [{"transport": "structured"}, {"access": "unrestricted"}, {"colour": "red"}])
def test_it_rejects_unknown_keys_as_invalid_envelope(room, extra):
    response = room.post("/api/messages", message(**extra))

    assert response.status_code == 400
    assert error_of(response)["code"] == "INVALID_ENVELOPE"


@pytest.mark.parametrize(
    "to", [["kimi"], ["user:web"], ["agent:"], [], "agent:alpha", ["agent:alpha", "agent:alpha"], [7]]
)
def test_it_rejects_malformed_targets_with_400(room, to):
    response = room.post("/api/messages", message(to=to))

    assert response.status_code == 400
    assert error_of(response)["code"] == "INVALID_ENVELOPE"


def test_it_rejects_more_than_32_targets(room):
    response = room.post("/api/messages", message(to=[f"agent:a{i}" for i in range(33)]))

    assert response.status_code == 400
    assert error_of(response)["code"] == "INVALID_ENVELOPE"


@pytest.mark.parametrize("target", ["agent:nobody", "agent:off", "agent:codex"])
def test_it_answers_404_for_a_well_formed_target_that_is_not_live(room, target):
    before = count_events(room)
    response = room.post("/api/messages", message(to=["agent:alpha", target]))

    assert response.status_code == 404
    error = error_of(response)
    assert error["code"] == "UNKNOWN_TARGET"
    assert error["details"]["unknownTargets"] == [target]
    assert count_events(room) == before


def test_it_accepts_content_at_the_limit_and_rejects_one_more_character(room):
    assert room.post("/api/messages", message(content="x" * 131_072)).status_code == 202

    response = room.post("/api/messages", message(content="x" * 131_073))

    assert response.status_code == 413
    assert error_of(response)["code"] == "MESSAGE_TOO_LARGE"


def test_it_counts_code_points_not_bytes(room):
    assert room.post("/api/messages", message(content="語" * 131_072)).status_code == 202


def test_it_refuses_a_body_over_two_mebibytes(room):
    response = room.post("/api/messages", message(content="x" * (2 * 1024 * 1024 + 10)))

    assert response.status_code == 413
    assert error_of(response)["code"] == "MESSAGE_TOO_LARGE"


@pytest.mark.parametrize("content", ["", "   \n", None, 5])
def test_it_rejects_blank_or_non_string_content(room, content):
    response = room.post("/api/messages", message(content=content))

    assert response.status_code == 400
    assert error_of(response)["code"] == "INVALID_ENVELOPE"


def test_it_answers_415_when_the_body_is_not_json(room):
    response = httpx.post(
        room.url("/api/messages"), content=b'{"to":["agent:alpha"]}', headers={"Content-Type": "text/plain"}
    )

    assert response.status_code == 415
    assert error_of(response)["code"] == "INVALID_ENVELOPE"


@pytest.mark.parametrize("raw", [b"", b"{not json", b"[1,2]", b'"text"'])
def test_it_rejects_an_empty_or_malformed_json_body(room, raw):
    response = httpx.post(room.url("/api/messages"), content=raw, headers={"Content-Type": "application/json"})

    assert response.status_code == 400
    assert error_of(response)["code"] == "INVALID_ENVELOPE"


def test_a_retry_with_the_same_command_returns_the_stored_result_and_writes_nothing(room):
    body = message()
    first = room.post("/api/messages", body)
    before = count_events(room)

    again = room.post("/api/messages", body)

    assert again.status_code == 202
    assert again.json() == first.json()
    assert count_events(room) == before


def test_the_same_command_id_with_another_payload_is_a_conflict(room):
    body = message()
    room.post("/api/messages", body)
    before = count_events(room)

    response = room.post("/api/messages", {**body, "content": "something else"})

    assert response.status_code == 409
    assert error_of(response)["code"] == "CLIENT_COMMAND_CONFLICT"
    assert count_events(room) == before


def test_a_rejected_command_leaves_no_receipt_so_the_id_can_be_reused(room):
    body = message(to=["agent:nobody"])
    assert room.post("/api/messages", body).status_code == 404

    assert room.post("/api/messages", {**body, "to": ["agent:alpha"]}).status_code == 202


def test_reply_and_forward_must_reference_existing_events(room):
    original = room.post("/api/messages", message()).json()["messageEventId"]

    reply = room.post("/api/messages", message(replyToEventId=original, forwardedEventId=original))
    assert reply.status_code == 202
    stored = next(e for e in room.events() if e["eventId"] == reply.json()["messageEventId"])
    assert stored["replyToEventId"] == original and stored["forwardedEventId"] == original

    before = count_events(room)
    for field in ("replyToEventId", "forwardedEventId"):
        response = room.post("/api/messages", message(**{field: "evt_missing"}))
        assert response.status_code == 400
        assert error_of(response)["code"] == "INVALID_ENVELOPE"
    assert count_events(room) == before


def test_a_wrong_method_gets_405_with_allow(room):
    response = room.get("/api/messages")

    assert response.status_code == 405
    assert response.headers["Allow"] == "POST"
    assert error_of(response)["code"] == "INVALID_ENVELOPE"


def test_an_unknown_api_path_gets_a_json_404(room):
    response = room.get("/api/nothing-here")

    assert response.status_code == 404
    assert "code" in error_of(response)


def test_twenty_concurrent_posters_lose_nothing_and_seq_strictly_increases(make_server):
    room = make_server(limits={"queuePerAgent": 1000})
    after = 0
    results, errors = [], []

    def poster(n: int) -> None:
        with httpx.Client(timeout=30) as client:
            for i in range(5):
                body = message(to=["agent:sleeper"], content=f"poster {n} #{i}")
                r = client.post(room.url("/api/messages"), json=body)
                (results if r.status_code == 202 else errors).append(r)

    threads = [threading.Thread(target=poster, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    written = room.events(after)
    seqs = [e["seq"] for e in written]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    message_ids = {e["eventId"] for e in written if e["type"] == "message.created"}
    assert message_ids == {r.json()["messageEventId"] for r in results}
    assert len(message_ids) == 100


def test_a_full_queue_is_refused_with_429_and_nothing_is_written(make_server):
    server = make_server(limits={"queuePerAgent": 2})
    for _ in range(2):
        assert server.post("/api/messages", message(to=["agent:sleeper"])).status_code == 202
    before = len(server.events())

    response = server.post("/api/messages", message(to=["agent:sleeper"]))

    assert response.status_code == 429
    assert error_of(response)["code"] == "QUEUE_CAPACITY_REACHED"
    assert len(server.events()) == before

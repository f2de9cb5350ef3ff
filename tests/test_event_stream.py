"""GET /api/events: replay, live tail, cursors and slow readers (PROTOCOL §11)."""

from __future__ import annotations

import threading
import uuid

import httpx
import pytest

from tests.sse import SseClient


def post(server, content="hi", to=("agent:sleeper",)) -> dict:
    body = {"clientCommandId": str(uuid.uuid4()), "to": list(to), "content": content}
    response = server.post("/api/messages", body)
    assert response.status_code == 202, response.text
    return response.json()


@pytest.fixture
def server(make_server):
    return make_server(limits={"queuePerAgent": 10_000})


def test_a_reader_from_zero_gets_every_durable_event_once_in_order_while_writes_happen(server):
    for i in range(10):
        post(server, f"before {i}")
    with SseClient(server.base_url, after_seq=0) as reader:
        writers = [
            threading.Thread(target=lambda n=n: [post(server, f"w{n}-{i}") for i in range(10)]) for n in range(4)
        ]
        for w in writers:
            w.start()
        for w in writers:
            w.join()
        head = server.events()[-1]["seq"]
        reader.wait_for_seq(head)

        seqs = [e["seq"] for e in reader.durable]
    assert seqs == list(range(1, head + 1))
    assert reader.status == 200


def test_frames_carry_an_id_only_for_durable_events_and_no_event_line(server):
    post(server)
    response_lines = []
    with httpx.stream("GET", server.url("/api/events?afterSeq=0"), timeout=10) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-cache, no-transform"
        for line in response.iter_lines():
            response_lines.append(line)
            if line.startswith("id: 2"):
                break
    assert not any(line.startswith("event:") for line in response_lines)
    assert "id: 1" in response_lines


def test_reconnecting_with_last_event_id_resumes_with_no_gap_and_no_duplicate(server):
    for i in range(5):
        post(server, f"first {i}")
    with SseClient(server.base_url) as first:
        first.wait_for_seq(10)
        last_seen = first.durable[-1]["seq"]
    for i in range(5):
        post(server, f"second {i}")
    head = server.events()[-1]["seq"]

    with SseClient(server.base_url, last_event_id=last_seen) as second:
        second.wait_for_seq(head)
        resumed = [e["seq"] for e in second.durable]

    assert resumed == list(range(last_seen + 1, head + 1))


def test_after_seq_and_last_event_id_may_both_be_sent_when_they_agree(server):
    for i in range(2):
        post(server, f"m{i}")
    with httpx.stream("GET", server.url("/api/events?afterSeq=2"), headers={"Last-Event-ID": "2"}, timeout=10) as r:
        assert r.status_code == 200
        first_id = next(line for line in r.iter_lines() if line.startswith("id:"))
    assert first_id == "id: 3"


@pytest.mark.parametrize(
    ("query", "header"), [("afterSeq=1", "2"), ("afterSeq=-1", None), ("afterSeq=abc", None), (None, "x1")]
)
def test_a_bad_or_conflicting_cursor_is_invalid_envelope(server, query, header):
    url = server.url("/api/events" + (f"?{query}" if query else ""))
    response = httpx.get(url, headers={"Last-Event-ID": header} if header else {}, timeout=5)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "INVALID_ENVELOPE"


def test_a_cursor_beyond_the_head_is_signalled_then_the_stream_continues(server):
    post(server)
    head = server.events()[-1]["seq"]
    with SseClient(server.base_url, after_seq=9999) as reader:
        reset = reader.wait_for(lambda e: e["type"] == "stream.reset")
        accepted = post(server, "after the reset")
        reader.wait_for(lambda e: e.get("eventId") == accepted["messageEventId"])
    assert reset["seq"] is None and reset["body"]["headSeq"] >= head


def test_a_slow_reader_loses_no_durable_event(server):
    with SseClient(server.base_url, after_seq=0, slow_seconds=0.002) as reader:
        for i in range(150):
            post(server, f"burst {i}")
        head = server.events()[-1]["seq"]
        reader.wait_for_seq(head, timeout=60)
        seqs = [e["seq"] for e in reader.durable]
    assert seqs == list(range(1, head + 1))


def test_many_readers_each_get_every_event(server):
    readers = [SseClient(server.base_url, after_seq=0) for _ in range(10)]
    try:
        for i in range(20):
            post(server, f"fan {i}")
        head = server.events()[-1]["seq"]
        for reader in readers:
            reader.wait_for_seq(head)
            assert [e["seq"] for e in reader.durable] == list(range(1, head + 1))
    finally:
        for reader in readers:
            reader.close()

"""GET /api/events with many streams: the shared tail and its paced wake-ups (rooms/tail.py ``Tail``).

Pacing changes only when a stream reads, never what it reads: every stream must still get every
durable seq exactly once and in order, and deltas in the order they were sent. How fast is
measured by bench/, never asserted here.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from datetime import UTC, datetime

import pytest

from tests.agents import fake_agents, send, wait_terminal
from tests.server import wait_until
from tests.sse import SseClient


def post(server, content="hi") -> dict:
    body = {"clientCommandId": str(uuid.uuid4()), "to": ["agent:sleeper"], "content": content}
    response = server.post("/api/messages", body)
    assert response.status_code == 202, response.text
    return response.json()


def head_of(server) -> int:
    return server.get("/api/bootstrap").json()["room"]["throughSeq"]


def seqs(reader: SseClient) -> list[int]:
    return [e["seq"] for e in reader.durable]


@pytest.fixture
def server(make_server):
    return make_server(limits={"queuePerAgent": 10_000})


def test_many_streams_attached_while_commits_burst_each_get_every_seq_once_in_order(server):
    post(server, "before")
    early = [SseClient(server.base_url, after_seq=0) for _ in range(30)]
    late: list[tuple[int, SseClient]] = []
    try:

        def write(n: int) -> None:
            for i in range(15):
                post(server, f"w{n}-{i}")

        writers = [threading.Thread(target=write, args=(n,)) for n in range(4)]
        for writer in writers:
            writer.start()
        for _ in range(5):  # streams that join in the middle of the burst, from the head they were told
            cursor = head_of(server)
            late.append((cursor, SseClient(server.base_url, after_seq=cursor)))
        for writer in writers:
            writer.join()
        head = head_of(server)

        for reader in early:
            reader.wait_for_seq(head, timeout=30)
            assert seqs(reader) == list(range(1, head + 1))
        for cursor, reader in late:
            reader.wait_for_seq(head, timeout=30)
            assert seqs(reader) == list(range(cursor + 1, head + 1))
    finally:
        for reader in early + [reader for _, reader in late]:
            reader.close()


def test_a_lone_stream_gets_each_commit_before_the_next_one_is_made(server):
    start = head_of(server)
    with SseClient(server.base_url, after_seq=start) as reader:
        for i in range(15):
            accepted = post(server, f"one at a time {i}")
            reader.wait_for(lambda e, m=accepted["messageEventId"]: e.get("eventId") == m)
        head = head_of(server)
        reader.wait_for_seq(head)

        assert seqs(reader) == list(range(start + 1, head + 1))


def insert_rows(server, count: int, *, body_size: int = 0) -> None:
    """Rows committed by another process (like a management command): they wake no bus."""
    now = datetime.now(UTC).isoformat()
    body = json.dumps({"content": "from another process" + "." * body_size})
    db = sqlite3.connect(server.workdir / ".groupx" / "groupx.db", timeout=10)
    try:
        db.executemany(
            "INSERT INTO rooms_event (event_id, room_id, event_type, actor_id, actor_kind, actor_display_name,"
            " targets, correlation_id, root_correlation_id, occurred_at, body) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            [
                (
                    f"evt_other{uuid.uuid4().hex}",
                    "room:main",
                    "message.created",
                    "user:web",
                    "user",
                    "You",
                    "[]",
                    f"corr_o{i}",
                    f"corr_o{i}",
                    now,
                    body,
                )
                for i in range(count)
            ],
        )
        db.commit()
    finally:
        db.close()


def test_rows_from_another_process_beyond_the_shared_window_reach_every_stream_once_in_order(server):
    post(server, "before")
    start = head_of(server)
    # one seq before the head, so that receiving it shows a stream has joined and is at the head
    readers = [(start - 1, SseClient(server.base_url, after_seq=start - 1)) for _ in range(4)]
    readers += [(0, SseClient(server.base_url, after_seq=0)) for _ in range(2)]
    try:
        for _, reader in readers:
            reader.wait_for_seq(start)
        insert_rows(server, 1_500)  # more than the 1,000 frames the shared tail keeps
        head = start + 1_500
        for _, reader in readers:  # no commit in this process: only the tail's poll finds them
            reader.wait_for_seq(head, timeout=30)
        post(server, "after")  # and the live tail goes on from there
        head = head_of(server)
        for cursor, reader in readers:
            reader.wait_for_seq(head, timeout=30)
            assert seqs(reader) == list(range(cursor + 1, head + 1))
    finally:
        for _, reader in readers:
            reader.close()


def test_deltas_reach_every_attached_stream_complete_and_in_order(make_server, tmp_path):
    room = make_server(fake_agents(tmp_path, "kimi"))
    readers = [SseClient(room.base_url, after_seq=0) for _ in range(20)]
    try:
        accepted = send(room, "agent:kimi", "hello [[fake: stream n=5]]")
        turn_id = accepted["turns"][0]["turnId"]
        terminal = wait_terminal(room, turn_id)
        for reader in readers:
            reader.wait_for(lambda e: e.get("eventId") == terminal["eventId"])
            deltas = [
                e for e in reader.transient if e["type"] == "turn.content.delta" and e["body"]["turnId"] == turn_id
            ]
            assert [d["body"]["chunkIndex"] for d in deltas] == [0, 1, 2, 3, 4]
    finally:
        for reader in readers:
            reader.close()


def test_many_streams_replaying_a_long_log_at_once_while_commits_arrive_each_get_every_seq_once(server):
    insert_rows(server, 1_200)  # longer than a page and than the shared tail's window
    readers = [SseClient(server.base_url, after_seq=0) for _ in range(20)]
    try:
        for i in range(10):  # commits while the streams share their catch-up reads
            post(server, f"during the replay {i}")
        head = head_of(server)
        for reader in readers:
            reader.wait_for_seq(head, timeout=30)
            assert seqs(reader) == list(range(1, head + 1))
    finally:
        for reader in readers:
            reader.close()


def test_a_silent_stream_gets_a_heartbeat_and_then_still_gets_new_events(server):
    start = head_of(server)
    with SseClient(server.base_url, after_seq=start) as reader:
        wait_until(lambda: ": heartbeat" in reader.comments, timeout=40, message="a heartbeat (sent after 15 s)")
        accepted = post(server, "after the heartbeat")
        # The message and its turn.queued commit together, and the reader parses them one by one:
        # wait for the head, not for the message alone.
        head = head_of(server)
        reader.wait_for_seq(head, timeout=30)
        assert accepted["messageEventId"] in {e["eventId"] for e in reader.durable}
        assert seqs(reader) == list(range(start + 1, head + 1))


def test_a_reader_that_stops_reading_holds_back_no_one_and_later_gets_every_seq_once_in_order(server):
    # Megabytes of log: far more than the socket buffers, so the server has to stop writing to
    # the stalled reader (groupx_site/backpressure.py) and resume when it reads again.
    insert_rows(server, 6_000, body_size=2_000)
    head = head_of(server)
    hold = threading.Event()
    stalled = SseClient(server.base_url, after_seq=0, hold=hold)
    live = SseClient(server.base_url, after_seq=head)
    try:
        wait_until(lambda: stalled.status is not None, message="the stalled stream's headers")
        post(server, "while one reader is stalled")
        live.wait_for_seq(head + 1)  # served while the other stream cannot take any more

        hold.set()
        new_head = head_of(server)
        stalled.wait_for_seq(new_head, timeout=60)

        assert seqs(stalled) == list(range(1, new_head + 1))
    finally:
        hold.set()
        stalled.close()
        live.close()


def test_a_commit_after_rows_from_another_process_brings_those_rows_too_in_order(server):
    # The writer hands its committed frames to the shared tail (docs/DECISIONS.md D22); rows
    # another process wrote in between leave a gap, and the tail must read the table instead of
    # appending the handed frames after it (which would skip the gap's rows for good).
    post(server, "before")
    start = head_of(server)
    readers = [SseClient(server.base_url, after_seq=start - 1) for _ in range(3)]
    try:
        for reader in readers:
            reader.wait_for_seq(start)
        insert_rows(server, 5)  # no bus wake-up: only the tail's 2 s poll would find them
        post(server, "right after them")
        head = head_of(server)
        for reader in readers:
            reader.wait_for_seq(head)
            assert seqs(reader) == list(range(start, head + 1))
    finally:
        for reader in readers:
            reader.close()

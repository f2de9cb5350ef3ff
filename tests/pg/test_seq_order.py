"""On PostgreSQL, seq is gap-free and in commit order across processes (docs/DECISIONS.md D53).

Two connections stand for two processes: the second insert waits for the first transaction's end
(seen in ``pg_locks``, not by sleeping), so seq N+1 never commits while N is in flight; a rolled
back insert leaves no gap. Then two daphne web processes of one room (split mode, over Redis) take
posts at the same time, and every stream gets every seq once, in order.
"""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from tests.agents import send
from tests.pg.databases import room_database_url
from tests.server import hanging_agent, wait_until
from tests.split.conftest import start_split_room
from tests.sse import SseClient

INSERT = """
    INSERT INTO rooms_event (event_id, room_id, event_type, actor_id, actor_kind, actor_display_name, targets,
        correlation_id, root_correlation_id, occurred_at, body)
    VALUES (%s, 'room:main', 'message.created', 'user:local', 'user', 'You', '[]', %s, %s, now(), '{}')
    RETURNING seq"""


def insert(db: psycopg.Connection) -> int:
    event_id = f"evt_{uuid.uuid4().hex}"
    return db.execute(INSERT, [event_id, event_id, event_id]).fetchone()[0]


def waiting_on_a_lock(db: psycopg.Connection, pid: int) -> bool:
    return bool(db.execute("SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted", [pid]).fetchone())


@pytest.fixture
def database(tmp_path):
    return room_database_url(tmp_path)


def test_a_second_insert_waits_for_the_first_transaction_and_takes_the_next_seq(database):
    with (
        psycopg.connect(database) as first,
        psycopg.connect(database) as second,
        psycopg.connect(database, autocommit=True) as observer,
    ):
        head = observer.execute("SELECT COALESCE(MAX(seq), 0) FROM rooms_event").fetchone()[0]
        assert insert(first) == head + 1  # in flight, not committed
        second_pid = second.info.backend_pid
        result: list[int] = []
        thread = threading.Thread(target=lambda: result.append(insert(second)))
        thread.start()
        wait_until(
            lambda: waiting_on_a_lock(observer, second_pid),
            timeout=30,
            message="the second insert to wait for the first transaction",
        )
        assert observer.execute("SELECT COUNT(*) FROM rooms_event WHERE seq > %s", [head]).fetchone()[0] == 0
        first.commit()
        thread.join(timeout=30)
        second.commit()
    assert result == [head + 2]


def test_a_rolled_back_insert_leaves_no_gap(database):
    with psycopg.connect(database) as db:
        head = db.execute("SELECT COALESCE(MAX(seq), 0) FROM rooms_event").fetchone()[0]
        assert insert(db) == head + 1
        db.rollback()
        assert insert(db) == head + 1
        db.commit()


def test_posts_to_two_web_processes_at_once_reach_every_stream_once_and_in_order(tmp_path, redis_server):
    agents = {"sleeper": hanging_agent(tmp_path)}
    room = start_split_room(tmp_path, agents, redis_server, webs=2, workers=1)
    try:
        posts_reach_every_stream_once_and_in_order(room, ["agent:sleeper"])
    finally:
        room.stop()


def posts_reach_every_stream_once_and_in_order(room, targets: list[str], posts_per_web: int = 20) -> None:
    """Posts to ``room``'s two web processes at once (to each of ``targets`` in turn): one stream
    per web process, and each gets every seq once, in order, and every post."""
    streams = [SseClient(web.base_url, after_seq=0) for web in room.webs]
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(
                pool.map(
                    lambda n: send(room.webs[n % 2], targets[n % len(targets)], f"post {n}"), range(2 * posts_per_web)
                )
            )
        head = room.web.get("/api/bootstrap").json()["room"]["throughSeq"]
        for stream in streams:
            stream.wait_for_seq(head, timeout=60)
            seqs = [event["seq"] for event in stream.durable]
            assert seqs == list(range(1, len(seqs) + 1))  # what came after the head (replies) too
        contents = [
            e["body"].get("content")
            for e in streams[0].durable
            if e["type"] == "message.created" and e["actor"]["kind"] == "user"
        ]
        posts = sorted(f"post {n}" for n in range(2 * posts_per_web))
        assert sorted(content for content in contents if content in posts) == posts
    finally:
        for stream in streams:
            stream.close()

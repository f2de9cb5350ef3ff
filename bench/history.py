"""The whole history at scale (the history work): older pages, message search and the Markdown export on
a seeded room, timed from the client (each figure includes the HTTP round trip).

    python -m bench.history [--events 100000] [--requests 30]

Prints one JSON object: median and p95 milliseconds per request for each read, the export's size
and time, how long the FTS ``rebuild`` of ``rooms/migrations/0002`` takes for a room of that size
(what an existing room paid once when it upgraded), and what indexing adds to appending a message,
by the old trigger and in the batches of D80. Nothing is asserted: these are measurements.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from bench.server import BenchServer
from bench.stats import percentile

RARE = "aardvark"  # in exactly one message, near the beginning of the room


def seed(db_path: Path, total: int) -> None:
    """``total`` messages by the user and an agent in turn, one a second, straight into the log (the
    search index takes them in ``rebuild_seconds``)."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    db = sqlite3.connect(db_path)
    try:
        rows = []
        for i in range(total):
            actor = ("user:web", "user", "You") if i % 2 == 0 else ("agent:kimi", "agent", "Kimi")
            text = f"message {i} on topic-{i % 1000}: the build passes and the review is done"
            if i == 10:
                text += f" ({RARE})"
            at = str((start + timedelta(seconds=i)).replace(tzinfo=None))
            rows.append(
                (
                    f"evt_hist{i}",
                    "room:main",
                    "message.created",
                    *actor,
                    "[]",
                    f"corr_h{i}",
                    f"corr_h{i}",
                    at,
                    json.dumps({"content": text}),
                )
            )
        db.executemany(
            "INSERT INTO rooms_event (event_id, room_id, event_type, actor_id, actor_kind, actor_display_name,"
            " targets, correlation_id, root_correlation_id, occurred_at, body) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            rows,
        )
        db.commit()
    finally:
        db.close()


def rebuild_seconds(db_path: Path) -> float:
    """The index rebuilt from the whole log, and its mark moved to the head, as an upgrade leaves
    them (rooms/migrations/0004): the server's indexer then has nothing left to take."""
    db = sqlite3.connect(db_path)
    try:
        started = time.perf_counter()
        db.execute("INSERT INTO rooms_message_fts(rooms_message_fts) VALUES ('rebuild')")
        seconds = time.perf_counter() - started
        db.execute("UPDATE rooms_message_fts_mark SET indexed_through = (SELECT MAX(seq) FROM rooms_event)")
        db.commit()
        return round(seconds, 2)
    finally:
        db.close()


def insert_cost_ms(content: str, rows: int) -> dict:
    """What the search index adds to appending one message, on an in-memory copy of the log's
    shape: without an index, with 0002's insert trigger (a commit per message), and in one batch
    of D80 after the same commits (the batch's own statement, ``rooms/search_index.py``)."""
    import importlib

    from rooms import search_index

    statements = importlib.import_module("rooms.migrations.0002_message_search").STATEMENTS
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE rooms_event (seq INTEGER PRIMARY KEY AUTOINCREMENT, event_type TEXT, body TEXT)")
    body = json.dumps({"content": content})

    def per_row(then: str | None = None) -> float:
        first = db.execute("SELECT COALESCE(MAX(seq), 0) FROM rooms_event").fetchone()[0]
        started = time.perf_counter()
        for _ in range(rows):
            db.execute("INSERT INTO rooms_event (event_type, body) VALUES ('message.created', ?)", [body])
            db.commit()
        if then is not None:
            db.execute(then, [first])
            db.commit()
        return (time.perf_counter() - started) * 1000 / rows

    without = per_row()
    for sql in statements:
        db.execute(sql)
    by_trigger = per_row()
    db.execute(f"DROP TRIGGER {search_index.FTS_TABLE}_ai")
    batched = per_row(
        f"INSERT INTO {search_index.FTS_TABLE}(rowid, content) SELECT seq, content "
        f"FROM {search_index.VIEW} WHERE seq > ?"
    )
    db.close()
    return {
        "withoutIndexMs": round(without, 3),
        "withIndexMs": round(by_trigger, 3),
        "batchedIndexMs": round(batched, 3),
    }


def timed(client: httpx.Client, path: str, params: dict, requests: int) -> dict:
    times = []
    for index in range(requests + 3):
        started = time.perf_counter()
        response = client.get(path, params=params)
        elapsed = (time.perf_counter() - started) * 1000
        response.raise_for_status()
        if index >= 3:  # warm-up
            times.append(elapsed)
    return {
        "medianMs": round(statistics.median(times), 2),
        "p95Ms": round(percentile(times, 95), 2),
        "bytes": len(response.content),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=30)
    args = parser.parse_args(argv)
    prose = "the build passes on both machines and the review of the migration is done; shipping next. "
    results_insert = {
        "insertShortMessage": insert_cost_ms(prose, 2_000),
        "insertLargestMessage": insert_cost_ms((prose * 1_500)[:131_072], 30),
    }
    server = BenchServer(Path(tempfile.mkdtemp(prefix="groupx-bench-history-")))
    server.migrate()
    started = time.perf_counter()
    seed(server.db_path, args.events)
    results: dict = {
        "events": args.events,
        "seedSeconds": round(time.perf_counter() - started, 2),
        "ftsRebuildSeconds": rebuild_seconds(server.db_path),
        **results_insert,
    }
    server.start()
    try:
        head = httpx.get(f"{server.base_url}/api/bootstrap").json()["room"]["throughSeq"]
        with httpx.Client(base_url=server.base_url, timeout=120) as client:
            n = args.requests
            results["pageNewest100"] = timed(client, "/api/events/page", {"limit": 100}, n)
            results["pageMiddle500"] = timed(client, "/api/events/page", {"beforeSeq": head // 2, "limit": 500}, n)
            results["pageFirst100"] = timed(client, "/api/events/page", {"beforeSeq": 101, "limit": 100}, n)
            results["searchRareWord"] = timed(client, "/api/search", {"q": RARE}, n)
            results["searchCommonWord20"] = timed(client, "/api/search", {"q": "review"}, n)
            results["searchTwoWords20"] = timed(client, "/api/search", {"q": "topic-999 passes"}, n)
            results["searchShortTermLike"] = timed(client, "/api/search", {"q": "99"}, n)
            # A term too short for the trigram index that matches nothing reads every message (LIKE).
            results["searchShortTermNoMatch"] = timed(client, "/api/search", {"q": "zq"}, n)
            results["searchNoMatch"] = timed(client, "/api/search", {"q": "zebra"}, n)
            results["exportOneHour"] = timed(
                client, "/api/export.md", {"from": "2026-01-01T10:00:00Z", "to": "2026-01-01T11:00:00Z"}, 3
            )
            results["exportWholeRoom"] = timed(client, "/api/export.md", {}, 3)
    finally:
        server.stop()
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Seed a server's log with many messages at once, straight into its SQLite file (or its PostgreSQL
database, make test-pg).

Posting 1,000 messages through the API would queue Turns and take minutes; history tests only
need rows in the log. Rows go in through sqlite3 from the test process (WAL lets the running
server keep reading), so the server meets them as it meets its own inserts: its search index takes
them in its next batch (rooms/search_index.py), and search matches them as it will then.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from datetime import UTC, datetime, timedelta

from rooms import search_index
from tests.pg.databases import room_url_of, write_rows

ACTORS = {
    "user": ("user:web", "user", "You"),
    "kimi": ("agent:kimi", "agent", "Kimi"),
    "system": ("system:groupx", "system", "GroupX"),
}


def message(
    content: str,
    *,
    author: str = "user",
    at: datetime | None = None,
    reply_to: str | None = None,
    event_id: str | None = None,
) -> dict:
    return {
        "content": content,
        "author": author,
        "at": at,
        "reply_to": reply_to,
        "event_id": event_id or f"evt_{uuid.uuid4().hex}",
    }


def numbered(n: int, *, start: datetime | None = None, text: str = "history line {i}") -> list[dict]:
    """``n`` messages, one a second from ``start``, by the user and Kimi in turn."""
    start = start or datetime(2026, 1, 1, tzinfo=UTC)
    return [
        message(text.format(i=i), author=("user", "kimi")[i % 2], at=start + timedelta(seconds=i)) for i in range(n)
    ]


def seed_messages(server, messages: list[dict]) -> None:
    rows = []
    for m in messages:
        actor_id, kind, name = ACTORS[m["author"]]
        # As Django stores a DateTimeField on SQLite (naive UTC, a space): range filters compare text.
        at = str((m["at"] or datetime.now(UTC)).astimezone(UTC).replace(tzinfo=None))
        rows.append(
            (
                m["event_id"],
                "room:main",
                "message.created",
                actor_id,
                kind,
                name,
                "[]",
                m["reply_to"],
                f"corr_{m['event_id']}",
                f"corr_{m['event_id']}",
                at,
                json.dumps({"content": m["content"]}),
            )
        )
    insert = (
        "INSERT INTO rooms_event (event_id, room_id, event_type, actor_id, actor_kind, actor_display_name,"
        " targets, reply_to_event_id, correlation_id, root_correlation_id, occurred_at, body)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
    )
    if url := room_url_of(server.config_path):  # make test-pg: the room's PostgreSQL database
        write_rows(url, insert, rows)
        return
    db = sqlite3.connect(server.workdir / ".groupx" / "groupx.db", timeout=30)
    try:
        db.executemany(insert, rows)
        db.commit()
    finally:
        db.close()


def indexed_through(server) -> int | None:
    """How far the server's message search index has got (its mark), read from its SQLite file;
    None on PostgreSQL, which has no such index."""
    if room_url_of(server.config_path):
        return None
    db = sqlite3.connect(f"file:{server.workdir / '.groupx' / 'groupx.db'}?mode=ro", uri=True, timeout=30)
    try:
        return db.execute(search_index.INDEXED_THROUGH_SQL).fetchone()[0]
    finally:
        db.close()

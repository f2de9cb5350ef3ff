"""The room's durable SSE frames as bytes, exactly as a client receives them, and the rows of every
table: what the upgrade fixture records from the version that wrote it and what the upgrade test
compares the current code's answers with."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx

# Tables whose rows change when a room is merely opened (Django's own bookkeeping, the runtime's
# lease and health, the search index's batches) are compared by the tables they leave out.
VOLATILE = ("django_migrations", "django_session", "agents_runtimestate", "rooms_message_fts")


def durable_frames(base_url: str, head: int) -> bytes:
    """Every durable frame of the replay from seq 0 through ``head`` (``id:`` line, ``data:`` line,
    blank line), byte for byte; comments and transient frames are left out."""
    frames: list[bytes] = []
    with httpx.stream("GET", f"{base_url}/api/events?afterSeq=0", timeout=60) as response:
        pending: list[bytes] = []
        for line in _lines(response.iter_bytes()):
            if line == b"":
                if pending and pending[0].startswith(b"id: "):
                    frames.append(b"\n".join(pending) + b"\n\n")
                    if int(pending[0][4:]) >= head:
                        break
                pending = []
            elif not line.startswith(b":"):
                pending.append(line)
    return b"".join(frames)


def _lines(chunks):
    buffered = b""
    for chunk in chunks:
        buffered += chunk
        *complete, buffered = buffered.split(b"\n")
        yield from complete


def row_counts(database: Path) -> dict[str, int]:
    """Rows per table of a SQLite room (read-only), the FTS shadow tables and SQLite's own left out."""
    db = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        names = [
            row[0]
            for row in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                "AND name NOT LIKE 'rooms_message_fts%' AND name NOT LIKE 'memory_%fts%' ORDER BY name"
            )
        ]
        return {name: db.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0] for name in names}
    finally:
        db.close()

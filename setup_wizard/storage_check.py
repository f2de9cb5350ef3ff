"""Whether a storage path may hold this room: it must be absent, empty, or a GroupX room already.

Anything else (another program's SQLite file, a folder, a text file) is refused before Django
opens it: opening it would create GroupX's tables inside it and switch it to WAL. The check only
reads: an immutable, read-only open that takes no lock and writes no journal, WAL or shm file
(docs/DECISIONS.md D99).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

SQLITE_HEADER = b"SQLite format 3\x00"
ROOM_TABLE = "rooms_event"  # the event log: every GroupX room has it from its first migration


def storage_refusal(path: Path) -> str | None:
    """Why ``path`` cannot be this room's database, or None when it can."""
    if not path.exists():
        return None
    if not path.is_file():
        return f"{path} is not a file; name a new file or an existing GroupX room's database"
    with path.open("rb") as file:
        header = file.read(len(SQLITE_HEADER))
    if not header:
        return None  # an empty file: SQLite starts a new database in it
    if header != SQLITE_HEADER:
        return f"{path} is not a SQLite database; name a new file or an existing GroupX room's database"
    tables = _tables(path, immutable=True)
    if tables and ROOM_TABLE not in tables and Path(f"{path}-wal").exists():
        tables = _tables(path)  # a room's latest tables may still be in its WAL
    if not tables or ROOM_TABLE in tables:  # a database without a table yet, or a room
        return None
    return (
        f"{path} is another program's SQLite database (it has no GroupX room in it); GroupX leaves it "
        "untouched: name a new file or an existing GroupX room's database"
    )


def _tables(path: Path, *, immutable: bool = False) -> set[str]:
    """The table names of the database, read without writing anything (``immutable``: without a
    lock either, for a file no GroupX has open; otherwise read-only, to see a room's WAL)."""
    options = "mode=ro&immutable=1" if immutable else "mode=ro"
    try:
        connection = sqlite3.connect(f"file:{quote(str(path))}?{options}", uri=True)
    except sqlite3.Error:
        return set()
    try:
        return {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error:
        return set()
    finally:
        connection.close()

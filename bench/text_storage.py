"""The size of message bodies in a SQLite room, stored ASCII-escaped (Django's JSONField default, the
storage of 0.1.0) and as UTF-8 (``rooms/sql.py`` ``adapt_json``): ``python -m bench.text_storage``.

100 messages of the maximum size (131,072 characters) of each script go into a table shaped like the
log's body column, in WAL mode as a room is, and the file size after a checkpoint is printed."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path

from groupx_site.core.text import json_text

CHARACTERS = 131_072
SCRIPTS = {"ASCII": "a", "CJK": "中", "emoji": "🎉"}


def size(encode, text: str, folder: Path, name: str) -> int:
    path = folder / f"{name}.db"
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE rooms_event (seq INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL)")
    with db:
        for i in range(100):
            db.execute("INSERT INTO rooms_event (body) VALUES (?)", [encode({"content": text, "n": i})])
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return path.stat().st_size


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        print("| 100 messages of 131,072 characters | ASCII-escaped (0.1.0) | UTF-8 | ratio |")
        print("| --- | ---: | ---: | ---: |")
        for script, character in SCRIPTS.items():
            text = character * (CHARACTERS // len(character))
            before = size(json.dumps, text, Path(folder), f"{script}-ascii")
            after = size(json_text, text, Path(folder), f"{script}-utf8")
            print(f"| {script} | {before / 1e6:.1f} MB | {after / 1e6:.1f} MB | {before / after:.2f}× |")


if __name__ == "__main__":
    main()

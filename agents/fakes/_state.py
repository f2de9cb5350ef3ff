"""Resumable sessions of the fake CLIs: ``<GROUPX_FAKE_STATE_DIR or ~/.groupx-fake>/<family>/<id>.jsonl``.

A session's file is its snapshot on the first line (everything but the history) followed by one
line per history entry. A save whose only change is new history entries *appends* them: the
fakes save after every turn, and rewriting the whole history each time (it holds every prompt,
i.e. every Context Packet) made a turn slower the longer the session ran — 3 ms per turn after
200 turns in ``make bench``, whose agents must answer at once. Anything else is an atomic
rewrite. A crash mid-append leaves at most a torn last line, which ``load`` skips.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path
from typing import Any

HISTORY = "history"


class StateStore:
    def __init__(self, family: str, base: str | None = None):
        base = base or os.environ.get("GROUPX_FAKE_STATE_DIR") or os.path.join(os.path.expanduser("~"), ".groupx-fake")
        self.dir = Path(base) / family
        self._written: dict[str, tuple[dict[str, Any], int]] = {}  # id → (snapshot, history entries on disk)

    def _path(self, session_id: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", session_id)[:120] or "_"
        return self.dir / f"{safe}.jsonl"

    def load(self, session_id: str) -> dict[str, Any] | None:
        if not session_id:
            return None
        try:
            first, *rest = self._path(session_id).read_text(encoding="utf-8").splitlines()
            data = json.loads(first)
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("id") != session_id:
            return None
        if data.pop("_historyLines", False):
            data[HISTORY] = [entry for entry in map(_decoded, rest) if entry is not None]
        return data

    def save(self, session_id: str, data: dict[str, Any]) -> None:
        history = data.get(HISTORY)
        snapshot = {key: value for key, value in data.items() if key != HISTORY}
        path = self._path(session_id)
        on_disk = self._written.get(session_id)
        if (
            isinstance(history, list)
            and on_disk is not None
            and on_disk[0] == snapshot
            and len(history) >= on_disk[1]
            and path.exists()
        ):
            self._append(path, history[on_disk[1] :])
        else:
            self._rewrite(path, session_id, data)
        self._written[session_id] = (snapshot, len(history) if isinstance(history, list) else 0)

    def _append(self, path: Path, entries: list[Any]) -> None:
        if entries:
            with open(path, "a", encoding="utf-8") as out:  # one write of whole lines
                out.write("".join(_line(entry) for entry in entries))

    def _rewrite(self, path: Path, session_id: str, data: dict[str, Any]) -> None:
        # Atomic replace: a crash mid-write must not leave a half file for the next process.
        self.dir.mkdir(parents=True, exist_ok=True)
        history = data.get(HISTORY)
        if isinstance(history, list):
            head = {key: value for key, value in data.items() if key != HISTORY}
            lines = [_line({**head, "id": session_id, "_historyLines": True})] + [_line(entry) for entry in history]
        else:
            lines = [_line({**data, "id": session_id})]
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:6]}.tmp")
        tmp.write_text("".join(lines), encoding="utf-8")
        os.replace(tmp, path)


def _line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) + "\n"


def _decoded(line: str) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None  # a torn last line from a crash mid-append

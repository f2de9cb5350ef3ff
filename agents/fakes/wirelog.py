"""Read the fakes' wire logs (``$GROUPX_FAKE_LOG_DIR/<flavor>-<pid>.jsonl``) in tests.

Each record is a dict with ``k`` (start, in, in_bad, out, mcp, check, exit, …) plus the
``flavor`` and ``pid`` taken from the file name. Records keep their per-file order, and files
come in the order their processes started.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def log_files(log_dir: str | Path) -> list[Path]:
    """The logs in launch order: by each file's first record, never by its last write, which an
    orphaned process (a dropped ssh connection) can make long after a newer launch began."""
    return sorted(Path(log_dir).glob("*-*.jsonl"), key=_started_at)


def _started_at(path: Path) -> float:
    with path.open("rb") as log:
        first = log.readline()
    try:
        return float(json.loads(first)["t"])
    except (ValueError, KeyError, TypeError):
        return path.stat().st_mtime  # nothing whole written yet: it has only just started


def read_records(
    log_dir: str | Path,
    *,
    flavor: str | None = None,
    pid: int | None = None,
    kind: str | None = None,
    name: str | None = None,
) -> list[dict[str, Any]]:
    """All records, filtered by flavour, pid, kind (``k``) and check/record ``name``."""
    out: list[dict[str, Any]] = []
    for path in log_files(log_dir):
        file_flavor, _, file_pid = path.stem.rpartition("-")
        if flavor is not None and file_flavor != flavor:
            continue
        if pid is not None and file_pid != str(pid):
            continue
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # a record still being written by a live process
            if kind is not None and rec.get("k") != kind:
                continue
            if name is not None and rec.get("name") != name:
                continue
            rec.setdefault("flavor", file_flavor)
            rec.setdefault("pid", int(file_pid) if file_pid.isdigit() else file_pid)
            out.append(rec)
    return out


def wait_for_records(
    log_dir: str | Path,
    predicate: Callable[[dict[str, Any]], bool] | None = None,
    *,
    timeout: float = 10.0,
    count: int = 1,
    **filters: Any,
) -> list[dict[str, Any]]:
    """Poll until at least ``count`` matching records exist (the fakes write asynchronously to
    the broker's view); raise ``TimeoutError`` with what was found at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        found = [r for r in read_records(log_dir, **filters) if predicate is None or predicate(r)]
        if len(found) >= count:
            return found
        if time.monotonic() >= deadline:
            raise TimeoutError(f"wanted {count} records matching {filters}, found {len(found)}")
        time.sleep(0.02)


def inbound_methods(records: list[dict[str, Any]]) -> list[str]:
    """Methods the broker sent, in order (requests and notifications)."""
    return [r["msg"]["method"] for r in records if r.get("k") == "in" and "method" in r.get("msg", {})]


def checks(records: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [r for r in records if r.get("k") == "check" and r.get("name") == name]

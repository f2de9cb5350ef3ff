"""Shared test helpers: write tiny child scripts and wait on conditions with deadlines."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path


def script(tmp_path: Path, body: str, name: str = "child.py") -> list[str]:
    """Write ``body`` as a Python script and return the argv that runs it."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


async def eventually(predicate: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
    """Poll ``predicate`` until it holds; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.02)


def pid_gone(pid: int) -> bool:
    """True when ``pid`` no longer exists or is a zombie (killed, awaiting its reaper)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


# A scripted JSON-RPC peer: it runs a plan of steps and appends every stdin line it reads to a
# log file. Steps: {"read": n} reads n frames; {"send": frame} writes it ("$id" is replaced by the
# id of the last frame read); {"raw": "latin-1 text"} writes bytes as they are; {"exit": code}.
# After the plan it keeps logging stdin until EOF, then exits 0.
PEER = r"""
import json, sys
plan, log = json.loads(sys.argv[1]), open(sys.argv[2], "a")
last = {}

def fill(value):
    if value == "$id":
        return last.get("id")
    if isinstance(value, dict):
        return {k: fill(v) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v) for v in value]
    return value

for step in plan:
    if "read" in step:
        for _ in range(step["read"]):
            line = sys.stdin.readline()
            if not line:
                sys.exit(0)
            log.write(line)
            log.flush()
            last = json.loads(line)
    elif "send" in step:
        sys.stdout.write(json.dumps(fill(step["send"])) + "\n")
        sys.stdout.flush()
    elif "raw" in step:
        sys.stdout.buffer.write(step["raw"].encode("latin-1"))
        sys.stdout.flush()
    elif "exit" in step:
        sys.exit(step["exit"])
for line in sys.stdin:
    log.write(line)
    log.flush()
"""


def read_log(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

"""A test-only fault hook: stop the dispatch path at a named phase so that a test can SIGKILL the
server exactly there (the fault tier, ``make test-faults``; docs/DECISIONS.md D36).

Inert unless the server starts with ``GROUPX_FAULT_PAUSE_AT`` naming one of ``PHASES``; then the
environment is read once, here, and every other call is one comparison. Armed, the
``GROUPX_FAULT_PAUSE_AFTER`` first arrivals at that phase (default 0) pass, so a test lets real work
through before the fault; every later arrival stops there for good. Each one that stops appends a
line to ``<GROUPX_FAULT_DIR>/paused`` (JSON: phase, turnId, pid) and its Turn takes no further
step: the first line is what the test waits for before it kills the process. Nothing else changes:
a phase pauses the one path production takes and never picks another; the lanes, the commits
(shared ones included, D68) and the recovery after the restart are the production code.

The phases, in a Turn's order (docs/ARCHITECTURE.md "The dispatch path"):
- ``queued``: the writer read the lane's head and has claimed nothing yet (it stops the writer
  thread, where the head is read and claimed in one call);
- ``before-write-ahead``: the claim (``turn.dispatched``, a ``prepared`` attempt) is written, the
  write-ahead is not. This one stops the writer thread too, as the two commits are one call there;
  when that call shares a commit with others (D68), the claim is not committed yet, as in production;
- ``after-write-ahead``: the attempt is committed ``prompt_invoked + unknown``, the prompt not sent;
- ``running``: the prompt was delivered and the first native event recorded (``turn.started``);
- ``completing``: the CLI's answer is in, the terminal transaction not yet run.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import threading
from pathlib import Path

QUEUED = "queued"
BEFORE_WRITE_AHEAD = "before-write-ahead"
AFTER_WRITE_AHEAD = "after-write-ahead"
RUNNING = "running"
COMPLETING = "completing"
PHASES = (QUEUED, BEFORE_WRITE_AHEAD, AFTER_WRITE_AHEAD, RUNNING, COMPLETING)

_ARMED = os.environ.get("GROUPX_FAULT_PAUSE_AT") or None
if _ARMED is not None and _ARMED not in PHASES:
    raise RuntimeError(f"GROUPX_FAULT_PAUSE_AT={_ARMED!r} names no phase; the phases are {', '.join(PHASES)}")
_PASS_FIRST = int(os.environ.get("GROUPX_FAULT_PAUSE_AFTER") or 0)
_MARKER_DIR = Path(os.environ.get("GROUPX_FAULT_DIR") or ".")
_arrivals = itertools.count()  # next() is atomic under the GIL: lanes and the writer thread share it


async def reached(phase: str, turn_id: str) -> None:
    """A lane reached ``phase`` with ``turn_id``: stop here for good if the hook is armed for it."""
    if phase != _ARMED or not _stops_here():
        return
    _write_marker(phase, turn_id)
    await asyncio.Event().wait()  # never set: the test kills the process


def reached_on_writer(phase: str, turn_id: str) -> None:
    """The same on the writer thread, which then stops: every later write waits behind it."""
    if phase != _ARMED or not _stops_here():
        return
    _write_marker(phase, turn_id)
    threading.Event().wait()


def _stops_here() -> bool:
    return next(_arrivals) >= _PASS_FIRST


def _write_marker(phase: str, turn_id: str) -> None:
    # One line per stopped Turn, in one append: the test waits for the first line, and once the
    # process is dead every Turn it caught at the phase is listed.
    line = json.dumps({"phase": phase, "turnId": turn_id, "pid": os.getpid()}) + "\n"
    fd = os.open(_MARKER_DIR / "paused", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)

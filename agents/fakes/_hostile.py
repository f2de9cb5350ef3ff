"""What a hostile CLI does to its broker (D23), shared by every fake.

- ``LONE_SURROGATE``: a marker a directive puts in any text; ``FrameWriter.frame`` writes it as
  the 6-character JSON escape ``\\ud800`` — valid JSON that no UTF-8 encoder can write back.
- ``close_own_stdin``: the fake closes fd 0 and keeps running. The main thread is blocked reading
  fd 0, and a blocked read holds the pipe open, so the worker signals the main thread, whose
  handler closes fd 0; the read then ends and ``stdin_lines`` holds the thread forever.
- ``never_sent_id``: a response id the broker never used, for the ``wrong-id`` directive.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

LONE_SURROGATE = "<<lone-surrogate>>"
LONE_SURROGATE_BYTES = LONE_SURROGATE.encode("ascii")
LONE_SURROGATE_ESCAPE = b"\\ud800"
_CLOSE_SIGNAL = signal.SIGUSR1


_log: Any = None  # the process's wire log, set with the handler
_closed = threading.Event()


def _close_stdin_now(_signum: int, _frame: Any) -> None:
    # fd 0 becomes /dev/null (so no file opened later can take its number): the pipe's read end
    # is closed, and the interrupted read, retried by Python, sees EOF, which ``stdin_lines``
    # tells from the broker's EOF by ``stdin_closed()``. A repeated signal finds nothing to do.
    if not _closed.is_set():
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        _closed.set()


def stdin_closed() -> bool:
    """True once this process closed its own stdin (``close-stdin``)."""
    return _closed.is_set()


def install_stdin_closer(log: Any) -> None:
    """Main thread only (signal handlers can only be set there)."""
    global _log
    _log = log
    signal.signal(_CLOSE_SIGNAL, _close_stdin_now)


def close_own_stdin(log: Any) -> None:
    log.record("close_stdin")
    main = threading.main_thread().ident or 0
    # A signal that lands just before the main thread enters its read only sets a flag that the
    # blocked read never looks at, so it is repeated until the main thread has closed fd 0.
    while not _closed.is_set():
        signal.pthread_kill(main, _CLOSE_SIGNAL)
        _closed.wait(0.05)


def hold_forever() -> None:
    """The main thread after its stdin is gone: stay alive until a signal ends the process."""
    if _log is not None:
        _log.record("stdin_closed", held=True)
    while True:
        threading.Event().wait(3600)


def with_lone_surrogates(data: bytes) -> bytes:
    return data.replace(LONE_SURROGATE_BYTES, LONE_SURROGATE_ESCAPE) if LONE_SURROGATE_BYTES in data else data


def never_sent_id(request_id: Any) -> str:
    """An id in the broker's own namespace shape that it never sent."""
    return f"{request_id}-never-sent"


def flood_text(chunk: int) -> str:
    return "x" * max(1, chunk)

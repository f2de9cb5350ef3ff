"""Record both directions of a real CLI's stdio wire (stdlib only).

    python wiretap.py --log DIR -- /path/to/cli ARGS...

Runs the CLI as a child in the same process group (GroupX signals the whole group) and relays
stdin and stdout line by line, unchanged, appending each line to ``DIR/<start>-<pid>.jsonl`` as
``{"t", "dir": "->" | "<-", "msg"}`` (``"raw"`` when a line is not JSON). The first record holds
the argv and cwd. stderr is not touched: the child writes straight to GroupX's pipe. The exit
code is the child's (128 + signal when it was killed).

The real-CLI tier puts this in every agent's wrapper script, so a test (or a person reading a
failure) can see exactly what GroupX's driver sent and what the real CLI answered.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path


class Tap:
    def __init__(self, directory: Path):
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{time.time():.6f}-{os.getpid()}.jsonl"
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed at exit)

    def write(self, record: dict) -> None:
        with self._lock:
            self._file.write(
                json.dumps({"t": round(time.monotonic() - self.started, 4), **record}, ensure_ascii=False) + "\n"
            )
            self._file.flush()

    def line(self, direction: str, data: bytes) -> None:
        text = data.decode("utf-8", "replace").rstrip("\r\n")
        if not text:
            return
        try:
            self.write({"dir": direction, "msg": json.loads(text)})
        except ValueError:
            self.write({"dir": direction, "raw": text[:20000]})


def main() -> int:
    args = sys.argv[1:]
    if len(args) < 4 or args[0] != "--log" or args[2] != "--":
        print("usage: wiretap.py --log DIR -- CMD [ARGS...]", file=sys.stderr)
        return 64
    tap = Tap(Path(args[1]))
    argv = args[3:]
    tap.write({"dir": "--", "argv": argv, "cwd": os.getcwd()})
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert child.stdin is not None and child.stdout is not None

    def pump_in() -> None:
        source = sys.stdin.buffer
        try:
            for data in iter(source.readline, b""):
                tap.line("->", data)
                child.stdin.write(data)
                child.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        finally:
            tap.write({"dir": "--", "event": "stdin closed"})
            with contextlib.suppress(OSError):
                child.stdin.close()

    threading.Thread(target=pump_in, daemon=True).start()
    out = sys.stdout.buffer
    try:
        for data in iter(child.stdout.readline, b""):
            tap.line("<-", data)
            out.write(data)
            out.flush()
    except (BrokenPipeError, OSError):
        pass
    code = child.wait()
    tap.write({"dir": "--", "event": "exit", "code": code})
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    status = main()
    # os._exit, not sys.exit: the stdin pump is a daemon thread blocked in a read that holds the
    # stdin buffer's lock, and a normal interpreter shutdown then aborts ("could not acquire lock
    # for <stdin>"), which would turn the CLI's own exit code into SIGABRT.
    with contextlib.suppress(OSError):
        sys.stdout.flush()
    os._exit(status)

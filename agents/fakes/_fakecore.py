"""Protocol-neutral core shared by GroupX's fake native CLIs (NATIVE_PROTOCOLS §6).

Everything here is independent of the wire dialect, so ``fake_acp.py`` today and
``fake_codex.py`` / ``fake_claude.py`` later can share it: the JSONL frame writer, the wire log,
scenario loading, the ``[[fake: …]]`` directive parser (re-exported from ``_fakedirectives``),
the time scale, the resumable sessions' store (re-exported from ``_state``), the turn/cancel helpers, the server-request table and the process-level
scenario keys (``ignore_sigterm``, ``spawn_grandchild``, …). The MCP client lives in
``_fakemcp.py``.

Stdlib only and Python ≥ 3.10, because the fakes must run under whatever ``python3`` the test
machine has and must be able to emit deliberately invalid output (§6.2).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

EX_USAGE = 64  # invalid argv (§6.6, §6.7)
EX_BAD_REPLY = 72  # strict_replies: the broker answered a native interaction wrongly
EX_CONFIG = 78  # unreadable scenario: fail loudly rather than run the wrong behaviour

_TRUTHY = {"1", "true", "yes", "on"}

try:  # imported as agents.fakes._fakecore (tests)
    from . import _hostile as hostile
    from ._fakedirectives import (
        Directive,
        DirectiveError,
        current_message,
        default_turn_directives,
        find_blocks,
        parse_directives,
        split_text,
        strip_blocks,
        turn_plan,
    )
    from ._state import StateStore
except ImportError:  # run through a shim: agents/fakes itself is on sys.path
    import _hostile as hostile  # type: ignore[no-redef]
    from _fakedirectives import (  # type: ignore[no-redef]
        Directive,
        DirectiveError,
        current_message,
        default_turn_directives,
        find_blocks,
        parse_directives,
        split_text,
        strip_blocks,
        turn_plan,
    )
    from _state import StateStore  # type: ignore[no-redef]

# Re-exports, so fakes see one core API. (Only these names are listed: the rest of the module is
# public anyway, and listing them keeps ruff from calling the imports unused.)
__all__ = [
    "Directive",
    "DirectiveError",
    "current_message",
    "default_turn_directives",
    "find_blocks",
    "parse_directives",
    "split_text",
    "strip_blocks",
    "turn_plan",
    "StateStore",
]

# ------------------------------------------------------------------------------------------- time


def time_scale() -> float:
    """GROUPX_FAKE_TIME_SCALE multiplies every *delay* (0 disables sleeps). Deadlines that are
    part of a check (e.g. "cancel within 5 s") are not scaled: they bound the broker, not us."""
    try:
        return max(float(os.environ.get("GROUPX_FAKE_TIME_SCALE", "1")), 0.0)
    except ValueError:
        return 1.0


def scaled(ms: float) -> float:
    """Milliseconds of configured delay → seconds to actually wait."""
    return max(float(ms), 0.0) * time_scale() / 1000.0


def sleep_ms(ms: float, cancel: threading.Event | None = None) -> bool:
    """Sleep a scaled delay; wake early when ``cancel`` fires. Returns True if cancelled."""
    secs = scaled(ms)
    if cancel is None:
        if secs > 0:
            time.sleep(secs)
        return False
    return cancel.wait(secs) if secs > 0 else cancel.is_set()


def wait_for_file(path: str | None, poll_s: float = 0.02) -> None:
    """Block until ``path`` exists (no-op without one): a test holds a step of the fake until it
    creates the file, instead of guessing a delay."""
    if not path:
        return
    while not os.path.exists(path):
        time.sleep(poll_s)


# ---------------------------------------------------------------------------------------- wire log


class WireLog:
    """Appends one JSON record per line to ``$GROUPX_FAKE_LOG_DIR/<flavor>-<pid>.jsonl``.

    Off unless the variable is set, so agent workspaces stay untouched (§6.3). Each record is a
    single ``os.write`` on an O_APPEND fd, so it survives ``os._exit`` and never interleaves.
    """

    def __init__(self, flavor: str):
        self.flavor = flavor
        self.path: str | None = None
        self._fd: int | None = None
        # RLock: the SIGTERM handler runs on the main thread and may interrupt a record() there.
        self._lock = threading.RLock()
        self._seq = 0
        log_dir = os.environ.get("GROUPX_FAKE_LOG_DIR")
        if log_dir:
            os.makedirs(log_dir, exist_ok=True)
            self.path = os.path.join(log_dir, f"{flavor}-{os.getpid()}.jsonl")
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def record(self, k: str, **fields: Any) -> None:
        if self._fd is None:
            return
        with self._lock:
            self._seq += 1
            rec = {"k": k, "seq": self._seq, "t": round(time.time(), 6), **fields}
            data = (json.dumps(rec, ensure_ascii=False, default=repr) + "\n").encode("utf-8", "replace")
            while data:
                data = data[os.write(self._fd, data) :]

    def check(self, name: str, ok: bool, **fields: Any) -> None:
        self.record("check", name=name, ok=ok, **fields)


def raw_preview(data: bytes, limit: int = 2000) -> dict[str, Any]:
    """How raw (garbage) bytes appear in the log: readable, bounded, with the true length."""
    text = data[:limit].decode("utf-8", "backslashreplace")
    out: dict[str, Any] = {"raw": text}
    if len(data) > limit:
        out["raw_len"] = len(data)
    return out


# ------------------------------------------------------------------------------------ frame writer


class FrameWriter:
    """Writes JSONL frames to stdout: one write and one flush per frame under one lock shared by
    every thread (§6.2), so frames from the turn worker and the main thread never interleave."""

    def __init__(self, log: WireLog, stream: Any = None):
        self._log = log
        self._out = stream if stream is not None else sys.stdout.buffer
        self._lock = threading.Lock()

    def frame(self, msg: Any) -> None:
        data = (json.dumps(msg, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        data = hostile.with_lone_surrogates(data)  # the `surrogate` directive's marker (D23)
        with self._lock:
            # Logged inside the lock so the log order is the wire order.
            if len(data) > 65536:
                self._log.record("out", **raw_preview(data))
            else:
                self._log.record("out", msg=msg)
            self._write(data)

    def raw(self, data: bytes) -> None:
        """Garbage modes: bytes exactly as given, no newline added."""
        with self._lock:
            self._log.record("out", **raw_preview(data))
            self._write(data)

    def _write(self, data: bytes) -> None:
        try:
            self._out.write(data)
            self._out.flush()
        except (BrokenPipeError, ValueError, OSError):
            # The broker closed our stdout: a real CLI would die too.
            exit_now(self._log, 0, "stdout_closed")


def write_stderr(log: WireLog, text: str) -> None:
    try:
        sys.stderr.write(text if text.endswith("\n") else text + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    log.record("stderr", text=text)


def answer_version(argv: list[str], name: str) -> None:
    """``<cli> --version`` prints one line and exits 0, as the real CLIs do (what /setup's Test and
    ``groupx doctor`` probe), without opening a wire log: it is not a session."""
    if argv == ["--version"]:
        sys.stdout.write(f"{name} 0.0.0 (GroupX fake)\n")
        sys.stdout.flush()
        raise SystemExit(0)


def exit_now(log: WireLog, code: int, why: str, **fields: Any) -> NoReturn:
    """Log ``exit`` and leave at once. ``os._exit`` skips atexit and thread joins, which is what a
    crashing CLI looks like, and the log line is already on disk."""
    log.record("exit", code=code, why=why, **fields)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def crash_by_signal(log: WireLog, sig: str | int) -> NoReturn:
    if isinstance(sig, str) and not sig.isdigit():
        signum = int(getattr(signal, sig.upper() if sig.upper().startswith("SIG") else "SIG" + sig.upper()))
    else:
        signum = int(sig)
    log.record("exit", code=-int(signum), why="crash", signal=signal.Signals(signum).name)
    os.kill(os.getpid(), signum)
    time.sleep(5)  # SIGKILL/SIGSEGV land before this returns
    os._exit(1)


# ---------------------------------------------------------------------------------------- scenario


class ScenarioError(Exception):
    pass


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Objects merge recursively; any other value (lists included) replaces."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _parse_scenario(raw: str, source: str) -> dict[str, Any]:
    raw = raw.strip()
    if not raw:
        return {}
    if raw.startswith("@"):
        try:
            raw = Path(raw[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise ScenarioError(f"{source}: cannot read {raw[1:]}: {exc}") from exc
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ScenarioError(f"{source}: invalid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise ScenarioError(f"{source}: scenario must be a JSON object")
    return value


def load_scenario(flavor: str, defaults: dict[str, Any], cwd: str | None = None) -> dict[str, Any]:
    """Layers, lowest first (§6.3): defaults, GROUPX_FAKE_SCENARIO, GROUPX_FAKE_SCENARIO_<FLAVOR>,
    then ``<cwd>/.groupx-fake.json`` (per agent, since each agent has its own cwd)."""
    scenario = dict(defaults)
    env_keys = ("GROUPX_FAKE_SCENARIO", f"GROUPX_FAKE_SCENARIO_{flavor.upper()}")
    for key in env_keys:
        if os.environ.get(key):
            scenario = deep_merge(scenario, _parse_scenario(os.environ[key], key))
    path = Path(cwd or os.getcwd()) / ".groupx-fake.json"
    if path.is_file():
        scenario = deep_merge(scenario, _parse_scenario("@" + str(path), str(path)))
    return scenario


def scenario_bool(scenario: dict[str, Any], key: str, default: bool = False) -> bool:
    value = scenario.get(key, default)
    return value.lower() in _TRUTHY if isinstance(value, str) else bool(value)


# ------------------------------------------------------------------------------------ turn helpers


class TurnControl:
    """Cancel flag and settle-once latch for one native turn."""

    def __init__(self) -> None:
        self.cancel = threading.Event()
        self.cancel_count = 0
        self._lock = threading.Lock()
        self._settled = False

    def request_cancel(self) -> int:
        with self._lock:
            self.cancel_count += 1
        self.cancel.set()
        return self.cancel_count

    def try_settle(self) -> bool:
        """True exactly once: whoever wins writes the terminal."""
        with self._lock:
            if self._settled:
                return False
            self._settled = True
            return True

    @property
    def settled(self) -> bool:
        return self._settled


def start_worker(
    log: WireLog, target: Callable[[], None], name: str, on_error: Callable[[str], None] | None = None
) -> threading.Thread:
    """Runs ``target`` on a daemon thread so the main thread keeps reading stdin (cancel must be
    processed while a turn streams, §6.2). A bug in the fake is logged and reported, never
    swallowed."""

    def run() -> None:
        try:
            target()
        except Exception:
            tb = traceback.format_exc()
            log.check("fake_internal_error", False, error=tb)
            write_stderr(log, "fake internal error:\n" + tb)
            if on_error is not None:
                on_error(tb)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread


class _Slot:
    def __init__(self) -> None:
        self.event = threading.Event()
        self.msg: dict[str, Any] | None = None

    def wait(self, timeout: float | None) -> dict[str, Any] | None:
        self.event.wait(timeout)
        return self.msg


class PendingRequests:
    """Requests the fake sent to the broker (interactions), keyed by integer id from 0."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next = 0
        self._slots: dict[Any, _Slot] = {}

    def new(self) -> tuple[int, _Slot]:
        with self._lock:
            req_id = self._next
            self._next += 1
            slot = self._slots[req_id] = _Slot()
            return req_id, slot

    def resolve(self, msg: dict[str, Any]) -> bool:
        with self._lock:
            slot = self._slots.pop(msg.get("id"), None)
        if slot is None:
            return False
        slot.msg = msg
        slot.event.set()
        return True


# ----------------------------------------------------------------------------------------- process


def decode_line(raw: bytes) -> tuple[Any, str | None]:
    """One inbound stdin line → (message, None) or (None, reason)."""
    line = raw.rstrip(b"\n").rstrip(b"\r")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None, "invalid_utf8"
    try:
        return json.loads(text), None
    except ValueError:
        return None, "not_json"


def stdin_lines() -> Iterator[bytes]:
    """Raw non-blank stdin lines until EOF (bytes, so invalid UTF-8 can be logged as in_bad)."""
    stream = sys.stdin.buffer
    while True:
        raw = stream.readline()
        if not raw and hostile.stdin_closed():
            hostile.hold_forever()  # not the broker's EOF: the `close-stdin` directive
        if not raw:
            return
        if raw.strip():
            yield raw


def log_start(log: WireLog, scenario: dict[str, Any] | None, argv: list[str] | None = None, **extra: Any) -> None:
    env = {key: os.environ.get(key) for key in ("IS_SANDBOX", "HOME", "NO_PROXY")}
    log.record(
        "start",
        argv=sys.argv[1:] if argv is None else argv,
        exe=sys.argv[0],
        cwd=os.getcwd(),
        pid=os.getpid(),
        ppid=os.getppid(),
        env=env,
        scenario=scenario,
        **extra,
    )


def install_process_options(log: WireLog, scenario: dict[str, Any]) -> None:
    """``ignore_sigterm`` and ``spawn_grandchild`` (§6.2), plus an exit record on SIGTERM."""
    ignore = scenario_bool(scenario, "ignore_sigterm")

    def on_sigterm(signum: int, _frame: Any) -> None:
        if ignore:
            log.record("signal", sig="SIGTERM", ignored=True)
            return
        log.record("exit", code=-signum, why="sigterm")
        # Die *by* the signal so the parent sees the usual -15 return code.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_sigterm)
    hostile.install_stdin_closer(log)
    spec = scenario.get("spawn_grandchild")
    if spec:
        opts = spec if isinstance(spec, dict) else {}
        seconds = float(opts.get("sleep_s", 600))
        # Same process group (no start_new_session), so only a group kill reaches it.
        stdio = None if opts.get("inherit_stdio") else subprocess.DEVNULL
        child = subprocess.Popen(
            [sys.executable, "-c", f"import time; time.sleep({seconds!r})"],
            stdin=subprocess.DEVNULL,
            stdout=stdio,
            stderr=stdio,
        )
        log.record("spawn", pid=child.pid, pgid=os.getpgid(child.pid))


def startup_common(log: WireLog, scenario: dict[str, Any]) -> None:
    """``stderr_on_start`` then ``exit_on_start {code, stderr}``, shared by every family."""
    lines = scenario.get("stderr_on_start")
    for line in [lines] if isinstance(lines, str) else lines or []:
        write_stderr(log, str(line))
    spec = scenario.get("exit_on_start")
    if spec:
        opts = spec if isinstance(spec, dict) else {}
        if opts.get("stderr"):
            write_stderr(log, str(opts["stderr"]))
        exit_now(log, int(opts.get("code", 1)), "exit_on_start")


def on_eof(log: WireLog, scenario: dict[str, Any]) -> NoReturn:
    """stdin EOF: exit 0, or with ``ignore_eof`` stay alive so the broker must signal us."""
    if scenario_bool(scenario, "ignore_eof"):
        log.record("eof", ignored=True)
        while True:
            threading.Event().wait(3600)
    exit_now(log, 0, "eof")


# ----------------------------------------------------------------------------------------- garbage

GARBAGE_KINDS = (
    "not_json",
    "invalid_utf8",
    "partial_line",
    "huge_line",
    "non_object",
    "wrong_jsonrpc",
    "missing_jsonrpc",
    "response_without_id",
    "bad_request_id",
    "orphan_response",
    "blank_and_crlf",
)
TOLERATED_GARBAGE = ("orphan_response", "blank_and_crlf")


def garbage_bytes(kind: str, harmless: dict[str, Any], *, jsonrpc: bool, size_mb: float = 2.0) -> bytes:
    """Bytes for ``garbage kind=…`` (§6.4). ``harmless`` is a valid notification the broker
    ignores (it carries the jsonrpc header already when the dialect has one)."""

    def dump(obj: Any) -> bytes:
        return json.dumps(obj, separators=(",", ":")).encode("utf-8")

    header = {"jsonrpc": "2.0"} if jsonrpc else {}
    if kind == "not_json":
        return b"fake garbage: this line is not JSON {\n"
    if kind == "invalid_utf8":
        return dump(harmless).replace(b"}", b',"_bad":"\xff\xfe\xfd"}', 1) + b"\n"
    if kind == "partial_line":
        data = dump(harmless)
        return data[: len(data) // 2]
    if kind == "huge_line":
        return dump({**harmless, "_pad": "x" * int(size_mb * 1024 * 1024)}) + b"\n"
    if kind == "non_object":
        return b'[1,2,"not an object"]\n'
    if kind == "wrong_jsonrpc":
        return dump({**harmless, "jsonrpc": "1.0"}) + b"\n"
    if kind == "missing_jsonrpc":
        return dump({k: v for k, v in harmless.items() if k != "jsonrpc"}) + b"\n"
    if kind == "response_without_id":
        return dump({**header, "result": {}}) + b"\n"
    if kind == "bad_request_id":
        return dump({**header, "id": {"not": "a valid id"}, "method": "fake/request", "params": {}}) + b"\n"
    if kind == "orphan_response":
        return dump({**header, "id": f"fake-orphan-{uuid.uuid4().hex[:8]}", "result": {}}) + b"\n"
    if kind == "blank_and_crlf":
        return b"\n\r\n" + dump(harmless) + b"\r\n"
    raise DirectiveError(f"garbage: unknown kind {kind!r}")

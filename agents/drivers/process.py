"""Child-process supervision shared by every native CLI driver (NATIVE_PROTOCOLS §1.4).

A ``JsonLineProcess`` owns one CLI child: it spawns it with an explicit argv (never a shell) in
its own process group, frames stdout as newline-delimited JSON objects, keeps a bounded,
ANSI-free tail of stderr, writes one compact JSON frame per call, and closes the whole group in
bounded steps (stdin EOF, SIGTERM, SIGKILL).

Framing is strict on purpose: invalid UTF-8, malformed JSON, a non-object, an over-long line or
EOF inside a line raise ``FrameError``, and the caller treats the connection as dead. Skipping a
bad line (as the ACP Python SDK does) leaves a pending request hanging forever.

One thing is repaired instead of refused (D23): a ``\\udXXX`` escape spelling a lone UTF-16
surrogate is valid JSON but cannot be written as UTF-8, so it would poison every log reader and
prompt that quoted it. It becomes U+FFFD here, where every native text enters, and the process
counts the repairs so the Turn that carried them can say so.
"""

from __future__ import annotations

import asyncio
import atexit
import codecs
import contextlib
import ctypes
import json
import logging
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from groupx_site.core.text import repair_tree

log = logging.getLogger(__name__)

DEFAULT_LINE_LIMIT = 1024 * 1024  # 1 MiB (Codex, ACP)
CLAUDE_LINE_LIMIT = 8 * 1024 * 1024  # Claude's stream-json frames can carry whole files
STDERR_TAIL_CHARS = 16 * 1024
TERM_WAIT_S = 2.0
KILL_WAIT_S = 2.0
_READ_CHUNK = 64 * 1024

# CSI (colours, cursor moves), OSC (window titles, hyperlinks) and two-byte escapes.
_ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# An escape sequence cut by a read boundary is held back until the next chunk completes it.
_MAX_HELD_ESCAPE = 256
# A JSON escape of a UTF-16 surrogate (\ud800-\udfff). Only a line holding one can decode to a
# lone surrogate, so only such a line is walked for repair; the usual line costs one regex scan.
_SURROGATE_ESCAPE_RE = re.compile(rb"\\u[dD][89abcdefABCDEF]")


class FrameError(Exception):
    """stdout broke the newline-delimited JSON framing; the connection is unusable."""


class ProcessClosedError(Exception):
    """stdin can no longer be written (the child exited or the process was closed)."""


class ProcessTerminationError(Exception):
    """The child survived SIGKILL of its process group; the workspace may still be held."""


# ---- PR_SET_PDEATHSIG --------------------------------------------------------------------------

_PR_SET_PDEATHSIG = 1


def _load_prctl() -> Any:
    # Resolved once in the parent: calling dlopen between fork and exec can deadlock.
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_prctl = _load_prctl()


# Steps every child runs between fork and exec, handed over by the wiring at start: the speed seam's
# ``one_cpu.restore_in_child`` gives a CLI back the CPUs the server's threads were pinned away from
# (D83). A plain callable, so the drivers import nothing of the seam.
_in_each_child: list[Callable[[], None]] = []


def also_in_each_child(step: Callable[[], None]) -> None:
    """Run ``step`` in every child started from now on, between fork and exec (it must not raise)."""
    if step not in _in_each_child:
        _in_each_child.append(step)


def _preexec_factory() -> Callable[[], None] | None:
    """Ask the kernel to SIGTERM the child if the server dies without closing it, and give the
    child back the CPUs the server's own threads were pinned away from (D83).

    The signal is tied to the *thread* that forked, so the event loop thread must outlive its
    children (it does: the runtime runs one loop for the server's lifetime).
    """
    if _prctl is None and not _in_each_child:
        return None
    parent_pid = os.getpid()

    def preexec() -> None:
        for step in _in_each_child:
            step()
        if _prctl is None:
            return
        _prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        # The parent may have died between fork and prctl; then nobody would ever signal us.
        if os.getppid() != parent_pid:
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


# ---- registry of running children, swept at interpreter exit -----------------------------------

_live: dict[int, int] = {}  # pid -> pgid, from spawn until the leader's exit is seen


def _killpg(pgid: int, sig: int) -> bool:
    """Signal a process group; False when the group no longer exists."""
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        # A pgid recycled by another user's process: never ours to signal.
        return False


def _exists(pid: int) -> bool:
    # No waitpid here: reaping would steal the exit status from asyncio's child watcher.
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@atexit.register
def kill_all_children() -> None:
    """Last resort when the server exits with children still running: TERM, then KILL the
    groups. (A server killed by a signal skips atexit; PR_SET_PDEATHSIG covers that case.)"""
    if not _live:
        return
    groups = dict(_live)
    _live.clear()
    for pgid in groups.values():
        _killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + 0.5
    pending = set(groups)
    while pending and time.monotonic() < deadline:
        pending = {pid for pid in pending if _exists(pid)}
        if pending:
            time.sleep(0.02)  # no event loop at exit; a short poll is all there is
    for pgid in groups.values():
        _killpg(pgid, signal.SIGKILL)


def live_child_pids() -> list[int]:
    """Pids of children spawned here that have not exited yet (for health pages and tests)."""
    return list(_live)


# ---- stderr cleaning ---------------------------------------------------------------------------


class _StderrCleaner:
    """Incremental UTF-8 decode and ANSI strip that survives chunk boundaries."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._held = ""

    def feed(self, data: bytes, *, final: bool = False) -> str:
        text = self._held + self._decoder.decode(data, final=final)
        self._held = ""
        esc = text.rfind("\x1b")
        if not final and esc >= 0 and len(text) - esc < _MAX_HELD_ESCAPE and not _ANSI_RE.match(text, esc):
            text, self._held = text[:esc], text[esc:]
        text = _ANSI_RE.sub("", text)
        return text.replace("\x1b", "").replace("\r\n", "\n")


def strip_ansi(text: str) -> str:
    return _ANSI_RE.sub("", text).replace("\x1b", "")


# ---- the process -------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


# One decoder and one encoder for every line: ``json.loads`` and ``json.dumps`` with an option
# build a new one per call.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def encode_frame(obj: Any) -> bytes:
    """One compact JSON line. Raises ValueError for anything that is not a serialisable dict:
    a malformed line must never reach a CLI's stdin (NATIVE_PROTOCOLS §5.3, X7)."""
    if not isinstance(obj, dict):
        raise ValueError(f"refusing to write a non-object frame ({type(obj).__name__})")
    try:
        text = _ENCODER.encode(obj)
        # Lone surrogates pass json.dumps but are not UTF-8; strict encoding refuses them.
        return text.encode("utf-8") + b"\n"
    except (TypeError, ValueError, UnicodeEncodeError) as exc:
        raise ValueError(f"refusing to write an unserialisable frame: {exc}") from exc


def decode_frame(line: bytes) -> dict[str, Any]:
    """Parse one stdout line (without its newline), lone surrogates repaired. Raises FrameError."""
    return decode_frame_repaired(line)[0]


def decode_frame_repaired(line: bytes) -> tuple[dict[str, Any], int]:
    """``decode_frame`` and how many lone surrogates it replaced with U+FFFD."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FrameError(f"invalid UTF-8 on stdout: {exc}") from None
    try:
        obj = _DECODER.decode(text)
    except ValueError as exc:  # JSONDecodeError, and int-digit limits
        raise FrameError(f"malformed JSON on stdout: {exc}; line starts {text[:120]!r}") from None
    except RecursionError:  # "[[[[…" a few thousand deep, well within the line limit
        raise FrameError("JSON on stdout nested too deeply to parse") from None
    if not isinstance(obj, dict):
        raise FrameError(f"non-object JSON frame on stdout ({type(obj).__name__})")
    if _SURROGATE_ESCAPE_RE.search(line) is None:
        return obj, 0
    # Pairs were already joined by json.loads; what is left unpaired cannot be written as UTF-8.
    try:
        return repair_tree(obj)
    except RecursionError:
        raise FrameError("JSON on stdout nested too deeply to repair") from None


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """Reports the child's exit as soon as it happens.

    ``Process.wait()`` only returns once every pipe is closed, i.e. after someone read stdout
    to EOF; a child blocked on a full stdout pipe after a fatal frame would never be seen to
    exit, and close() could not tell SIGKILL worked.
    """

    def __init__(self, *, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()
        # Set when our write end of the child's stdin closes: the child closed its read end (or
        # exited), or we closed it. Seen at once, even with nothing to write (D23).
        self.stdin_lost: asyncio.Future[None] = loop.create_future()

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        super().pipe_connection_lost(fd, exc)
        if fd == 0 and not self.stdin_lost.done():
            self.stdin_lost.set_result(None)

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


class JsonLineProcess:
    """One supervised child speaking newline-delimited JSON on stdio."""

    def __init__(
        self,
        proc: asyncio.subprocess.Process,
        transport: asyncio.SubprocessTransport,
        protocol: _Protocol,
        argv: Sequence[str],
        *,
        line_limit: int,
        on_stderr: Callable[[str], None] | None,
    ) -> None:
        self._proc = proc
        self._transport = transport
        self.argv = tuple(argv)
        self.pid = proc.pid
        self.pgid = proc.pid  # start_new_session makes the child its own group leader
        self.line_limit = line_limit
        self.on_stderr = on_stderr
        self._buf = bytearray()
        self._scan_from = 0
        self._eof = False
        self._stderr_tail = ""
        self._close_task: asyncio.Task[None] | None = None
        self._exited = protocol.exited
        self._exited.add_done_callback(self._on_exit)
        self._stdin_lost = protocol.stdin_lost
        self.text_repaired = 0  # lone surrogates replaced with U+FFFD on stdout, over the lifetime
        self._stderr_task = asyncio.ensure_future(self._drain_stderr())
        _live[self.pid] = self.pgid

    @classmethod
    async def spawn(
        cls,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        line_limit: int = DEFAULT_LINE_LIMIT,
        on_stderr: Callable[[str], None] | None = None,
    ) -> JsonLineProcess:
        """Start ``argv`` (no shell). ``env`` is the complete environment (None inherits).

        Raises OSError (e.g. FileNotFoundError, PermissionError) when it cannot be started.
        """
        if not argv:
            raise ValueError("empty argv")
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.subprocess_exec(
            lambda: _Protocol(limit=_READ_CHUNK, loop=loop),
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,
            preexec_fn=_preexec_factory(),
        )
        proc = asyncio.subprocess.Process(transport, protocol, loop)
        log.debug("spawned pid %s: %s", proc.pid, list(argv))
        return cls(proc, transport, protocol, argv, line_limit=line_limit, on_stderr=on_stderr)

    # -- state ----------------------------------------------------------------------------------

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode

    @property
    def running(self) -> bool:
        return self._proc.returncode is None

    @property
    def stderr_tail(self) -> str:
        return self._stderr_tail

    async def wait(self) -> int:
        """Wait for the child to exit and return its code."""
        await asyncio.shield(self._exited)
        assert self._proc.returncode is not None
        return self._proc.returncode

    async def wait_exit(self, timeout: float) -> bool:
        """True when the child exited within ``timeout`` seconds."""
        try:
            await asyncio.wait_for(asyncio.shield(self._exited), timeout)
        except TimeoutError:
            return False
        return True

    @property
    def closing(self) -> bool:
        """close() was called: a stdin or stdout that ends now is our doing."""
        return self._close_task is not None

    async def wait_stdin_lost(self) -> None:
        """Return once stdin can no longer be written, whoever closed it."""
        await asyncio.shield(self._stdin_lost)

    def _on_exit(self, _future: asyncio.Future[None]) -> None:
        # Orphans left in the group (MCP servers, shells) serve nobody once the leader is gone.
        # Sweeping now, while they still hold the pgid, means a stale pgid is never signalled.
        _killpg(self.pgid, signal.SIGKILL)
        _live.pop(self.pid, None)

    # -- stdout ---------------------------------------------------------------------------------

    async def read_frame(self) -> dict[str, Any] | None:
        """Next JSON object from stdout, or None at a clean EOF. Raises FrameError.

        Only one task may read at a time (the JSON-RPC client's reader).
        """
        assert self._proc.stdout is not None
        while True:
            nl = self._buf.find(b"\n", self._scan_from)
            if nl >= 0:
                line = bytes(self._buf[:nl])
                del self._buf[: nl + 1]
                self._scan_from = 0
                if line.endswith(b"\r"):
                    line = line[:-1]
                if len(line) > self.line_limit:
                    raise FrameError(f"stdout line of {len(line)} bytes exceeds the {self.line_limit}-byte limit")
                if not line.strip():
                    continue
                frame, repaired = decode_frame_repaired(line)
                if repaired:
                    self.text_repaired += repaired
                    log.warning("pid %s: replaced %s lone surrogate(s) on stdout with U+FFFD", self.pid, repaired)
                return frame
            # Reject an over-long line as soon as it is known, not after buffering all of it.
            if len(self._buf) > self.line_limit + 1:
                raise FrameError(f"stdout line exceeds the {self.line_limit}-byte limit")
            if self._eof:
                if self._buf.strip():
                    raise FrameError(f"EOF inside a partial stdout line of {len(self._buf)} bytes")
                return None
            self._scan_from = len(self._buf)
            chunk = await self._proc.stdout.read(_READ_CHUNK)
            if not chunk:
                self._eof = True
            self._buf += chunk

    # -- stdin ----------------------------------------------------------------------------------

    async def write_frame(self, obj: dict[str, Any]) -> None:
        """Serialise ``obj`` compactly and write it as one line (one write, one drain).

        Raises ValueError for a frame that is not a JSON-serialisable dict (nothing is written)
        and ProcessClosedError when stdin is gone.
        """
        await self._write(encode_frame(obj))

    async def write_preamble(self, data: bytes) -> None:
        """Raw bytes for the launcher in front of the CLI (ssh's remote script reads its secrets
        from here, remote.py), written before the first frame. Raises ProcessClosedError."""
        await self._write(data)

    async def _write(self, data: bytes) -> None:
        stdin = self._proc.stdin
        if stdin is None or stdin.is_closing() or self._close_task is not None:
            raise ProcessClosedError("stdin is closed")
        try:
            stdin.write(data)
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError, RuntimeError) as exc:
            raise ProcessClosedError(f"stdin write failed: {exc}") from exc

    # -- stderr ---------------------------------------------------------------------------------

    async def _drain_stderr(self) -> None:
        assert self._proc.stderr is not None
        cleaner = _StderrCleaner()
        while True:
            try:
                chunk = await self._proc.stderr.read(_READ_CHUNK)
            except (ConnectionResetError, BrokenPipeError):
                chunk = b""
            text = cleaner.feed(chunk, final=not chunk)
            if text:
                self._stderr_tail = (self._stderr_tail + text)[-STDERR_TAIL_CHARS:]
                if self.on_stderr is not None:
                    try:
                        self.on_stderr(text)
                    except Exception:  # a scanner bug must not stop the draining
                        log.exception("stderr callback failed for pid %s", self.pid)
            if not chunk:
                return

    # -- close ----------------------------------------------------------------------------------

    async def close(self, close_ms: int = 5_000) -> None:
        """stdin EOF, wait ``close_ms``; SIGTERM the group, wait 2 s; SIGKILL, wait 2 s.

        Idempotent and safe to call concurrently. Raises ProcessTerminationError if the child
        survives SIGKILL.
        """
        if self._close_task is None:
            self._close_task = asyncio.ensure_future(self._close(close_ms))
        await asyncio.shield(self._close_task)

    async def _close(self, close_ms: int) -> None:
        stdin = self._proc.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(stdin.wait_closed(), 0.5)
        try:
            exited = await self.wait_exit(close_ms / 1000)
            if not exited:
                log.info("pid %s ignored stdin EOF for %s ms; sending SIGTERM", self.pid, close_ms)
                _killpg(self.pgid, signal.SIGTERM)
                exited = await self.wait_exit(TERM_WAIT_S)
            if not exited:
                log.warning("pid %s ignored SIGTERM; sending SIGKILL", self.pid)
                _killpg(self.pgid, signal.SIGKILL)
                exited = await self.wait_exit(KILL_WAIT_S)
            if not exited:
                raise ProcessTerminationError(f"pid {self.pid} survived SIGKILL of its process group")
        finally:
            await self._finish_stderr()
            if not self.running:
                # Releases the pipes even if nobody read stdout to EOF (e.g. after a bad frame).
                self._transport.close()

    async def settle_stderr(self, timeout: float) -> None:
        """Wait (bounded) until stderr reaches EOF, so a crash's last words are in the tail."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._stderr_task), timeout)

    async def _finish_stderr(self) -> None:
        # Keep what the child said last; a grandchild holding stderr open must not block close.
        try:
            await asyncio.wait_for(asyncio.shield(self._stderr_task), 0.5)
        except (TimeoutError, asyncio.CancelledError):
            self._stderr_task.cancel()

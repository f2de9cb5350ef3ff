"""JsonLineProcess against tiny inline child scripts."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time

import pytest

from agents.drivers import process as process_mod
from agents.drivers.process import (
    FrameError,
    JsonLineProcess,
    ProcessClosedError,
    encode_frame,
    live_child_pids,
)

from .helpers import eventually, pid_gone, script

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc and prctl")

EMIT_RAW = """
    import sys
    sys.stdout.buffer.write({payload!r})
    sys.stdout.flush()
    sys.stdin.read()
"""


async def spawn_emitting(tmp_path, payload: bytes, **kwargs) -> JsonLineProcess:
    return await JsonLineProcess.spawn(script(tmp_path, EMIT_RAW.format(payload=payload)), **kwargs)


async def read_all(proc: JsonLineProcess) -> list[dict]:
    frames = []
    while (frame := await proc.read_frame()) is not None:
        frames.append(frame)
    return frames


@pytest.fixture
async def closer():
    procs: list[JsonLineProcess] = []
    yield procs.append
    for proc in procs:
        await proc.close(close_ms=1000)


async def test_it_spawns_the_exact_argv_in_the_given_cwd_and_environment(tmp_path, closer):
    argv = script(
        tmp_path,
        """
        import json, os, sys
        print(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "marker": os.environ.get("GX_MARK"),
                          "pgid": os.getpgid(0), "pid": os.getpid(), "sid": os.getsid(0)}), flush=True)
        sys.stdin.read()
    """,
    )
    workdir = tmp_path / "work"
    workdir.mkdir()
    proc = await JsonLineProcess.spawn(
        [*argv, "a b", "$HOME", ";echo"], cwd=str(workdir), env={**os.environ, "GX_MARK": "yes"}
    )
    closer(proc)
    frame = await proc.read_frame()
    assert frame["argv"] == ["a b", "$HOME", ";echo"]  # no shell ever saw them
    assert frame["cwd"] == str(workdir)
    assert frame["marker"] == "yes"
    assert frame["pgid"] == frame["pid"] == frame["sid"] == proc.pid  # its own session and group


@linux_only
async def test_it_asks_the_kernel_to_terminate_the_child_when_the_server_dies(tmp_path, closer):
    proc = await JsonLineProcess.spawn(
        script(
            tmp_path,
            """
        import ctypes, json, sys
        sig = ctypes.c_int(0)
        ctypes.CDLL(None).prctl(2, ctypes.byref(sig), 0, 0, 0)  # PR_GET_PDEATHSIG
        print(json.dumps({"pdeathsig": sig.value}), flush=True)
        sys.stdin.read()
    """,
        )
    )
    closer(proc)
    assert (await proc.read_frame())["pdeathsig"] == signal.SIGTERM


async def test_it_skips_empty_lines_and_strips_carriage_returns(tmp_path, closer):
    proc = await spawn_emitting(tmp_path, b'\n{"a":1}\r\n\r\n   \n{"b":2}\n')
    closer(proc)
    assert [await proc.read_frame(), await proc.read_frame()] == [{"a": 1}, {"b": 2}]
    await proc.close(close_ms=1000)
    assert await proc.read_frame() is None


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b'{"a":1}\n\xff\xfe{"b":2}\n', "invalid UTF-8"),
        (b'{"a":1}\n{"b":\n', "malformed JSON"),
        (b'{"a":1}\n[1,2]\n', "non-object"),
        (b'{"a":1}\n"text"\n', "non-object"),
        (b'{"a":1}\n{"n":NaN}\n', "malformed JSON"),
        (b'{"a":1}\n{"b":2}', "partial"),
    ],
)
async def test_it_treats_broken_framing_as_fatal(tmp_path, closer, payload, reason):
    proc = await spawn_emitting(tmp_path, payload)
    closer(proc)
    assert await proc.read_frame() == {"a": 1}
    if reason == "partial":
        proc._proc.stdin.close()  # let the child exit so stdout reaches EOF mid-line
    with pytest.raises(FrameError, match=reason):
        await proc.read_frame()


async def test_it_accepts_a_line_at_the_limit_and_rejects_one_byte_more(tmp_path, closer):
    limit = 64
    at_limit = json.dumps({"x": "y" * (limit - 8)}, separators=(",", ":")).encode()
    assert len(at_limit) == limit
    over = json.dumps({"x": "y" * (limit - 7)}, separators=(",", ":")).encode()
    proc = await spawn_emitting(tmp_path, at_limit + b"\r\n" + over + b"\n", line_limit=limit)
    closer(proc)
    assert (await proc.read_frame())["x"].startswith("y")
    with pytest.raises(FrameError, match="exceeds"):
        await proc.read_frame()


async def test_it_rejects_an_endless_line_without_buffering_all_of_it(tmp_path, closer):
    proc = await JsonLineProcess.spawn(
        script(
            tmp_path,
            """
        import sys
        sys.stdout.buffer.write(b'{"x":"' + b"y" * (4 * 1024 * 1024))
        sys.stdout.flush()
        sys.stdin.read()
    """,
        )
    )
    closer(proc)
    with pytest.raises(FrameError, match="exceeds the 1048576-byte limit"):
        await proc.read_frame()
    assert len(proc._buf) < 2 * 1024 * 1024


async def test_it_keeps_an_ansi_free_bounded_tail_of_stderr_and_reports_growth(tmp_path, closer):
    seen: list[str] = []
    proc = await JsonLineProcess.spawn(
        script(
            tmp_path,
            r"""
        import sys
        err = sys.stderr.buffer
        err.write(b"noise " * 5000)
        err.write(b"\x1b[31mred\x1b[0m and \x1b]0;title\x07plain\n")
        err.write(b"split \x1b[")
        err.flush()
        sys.stdin.readline()
        err.write(b"1mbold\x1b[0m done\n")
        err.flush()
        sys.stdin.read()
    """,
        ),
        on_stderr=seen.append,
    )
    closer(proc)
    await eventually(lambda: "plain" in proc.stderr_tail, what="first stderr burst")
    await proc.write_frame({"go": True})
    await eventually(lambda: "done" in proc.stderr_tail, what="second stderr burst")
    tail = proc.stderr_tail
    assert len(tail) == process_mod.STDERR_TAIL_CHARS
    assert tail.endswith("red and plain\nsplit bold done\n")
    assert "\x1b" not in tail
    assert "".join(seen).endswith("split bold done\n")


async def test_it_writes_one_compact_json_line_per_frame(tmp_path, closer):
    proc = await JsonLineProcess.spawn(
        script(
            tmp_path,
            """
        import json, sys
        for _ in range(2):
            line = sys.stdin.buffer.readline()
            print(json.dumps({"raw": line.decode()}), flush=True)
        sys.stdin.read()
    """,
        )
    )
    closer(proc)
    await proc.write_frame({"a": 1, "text": "é\nline", "list": [1, None]})
    assert (await proc.read_frame())["raw"] == '{"a":1,"text":"é\\nline","list":[1,null]}\n'
    await proc.write_frame({"b": 2})
    assert (await proc.read_frame())["raw"] == '{"b":2}\n'


@pytest.mark.parametrize(
    "bad",
    [["not", "a", "dict"], "text", {"nan": float("nan")}, {"obj": object()}, {"lone": "\ud800"}, {("tuple",): "key"}],
)
async def test_it_refuses_to_write_anything_but_a_serialisable_object(tmp_path, closer, bad):
    with pytest.raises(ValueError, match="refusing"):
        encode_frame(bad)
    proc = await JsonLineProcess.spawn(
        script(
            tmp_path,
            """
        import json, sys
        print(json.dumps({"raw": sys.stdin.readline()}), flush=True)
        sys.stdin.read()
    """,
        )
    )
    closer(proc)
    with pytest.raises(ValueError):
        await proc.write_frame(bad)
    await proc.write_frame({"ok": True})
    assert (await proc.read_frame())["raw"] == '{"ok":true}\n'  # nothing was written before it


async def test_it_reports_the_exit_code(tmp_path, closer):
    proc = await JsonLineProcess.spawn(script(tmp_path, "import sys; sys.exit(7)"))
    closer(proc)
    assert await proc.wait() == 7
    assert proc.returncode == 7 and not proc.running
    assert await proc.read_frame() is None


async def test_it_closes_a_cooperative_child_by_closing_stdin(tmp_path):
    proc = await JsonLineProcess.spawn(script(tmp_path, "import sys; sys.stdin.read(); sys.exit(0)"))
    started = time.monotonic()
    await proc.close(close_ms=5000)
    assert proc.returncode == 0
    assert time.monotonic() - started < 2
    assert proc.pid not in live_child_pids()
    with pytest.raises(ProcessClosedError):
        await proc.write_frame({"late": True})


async def test_it_escalates_to_sigterm_when_stdin_eof_is_ignored(tmp_path):
    proc = await JsonLineProcess.spawn(
        script(
            tmp_path,
            """
        import sys, time
        sys.stdin.read()
        time.sleep(60)
    """,
        )
    )
    await proc.close(close_ms=200)
    assert proc.returncode == -signal.SIGTERM


async def test_it_escalates_to_sigkill_when_sigterm_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setattr(process_mod, "TERM_WAIT_S", 0.3)
    proc = await JsonLineProcess.spawn(
        script(
            tmp_path,
            """
        import signal, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print('{"ready":true}', flush=True)
        sys.stdin.read()
        time.sleep(60)
    """,
        )
    )
    assert await proc.read_frame() == {"ready": True}  # the handler is installed
    await asyncio.gather(proc.close(close_ms=100), proc.close(close_ms=100))  # idempotent, concurrent
    assert proc.returncode == -signal.SIGKILL
    await proc.close()


@linux_only
async def test_it_takes_the_whole_process_group_down(tmp_path):
    proc = await JsonLineProcess.spawn(
        script(
            tmp_path,
            """
        import json, subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        print(json.dumps({"grandchild": child.pid}), flush=True)
        sys.stdin.read()
    """,
        )
    )
    grandchild = (await proc.read_frame())["grandchild"]
    await proc.close(close_ms=1000)
    await eventually(lambda: pid_gone(grandchild), what="the grandchild to die")


@linux_only
async def test_the_exit_hook_kills_children_still_registered(tmp_path):
    proc = await JsonLineProcess.spawn(
        script(
            tmp_path,
            """
        import signal, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print('{"ready":true}', flush=True)
        time.sleep(60)
    """,
        )
    )
    assert await proc.read_frame() == {"ready": True}
    assert proc.pid in live_child_pids()
    process_mod.kill_all_children()
    assert await proc.wait() == -signal.SIGKILL
    assert proc.pid not in live_child_pids()

"""What a hostile CLI sends, at the driver layer (D23): lone surrogates are repaired and
counted where frames are decoded, a closed stdin is noticed while idle, and a CLI that writes
faster than its turn is consumed is paced by the pipe instead of buffered without end."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agents.drivers.base import ContentDelta, TurnCompleted
from agents.drivers.jsonrpc import FrameReader, StdinClosed
from agents.drivers.process import FrameError, JsonLineProcess, decode_frame_repaired
from agents.drivers.turnkit import BACKLOG_EVENTS, QueuedTurn

from .helpers import eventually, script


@pytest.fixture
async def closer():
    procs: list[JsonLineProcess] = []
    yield procs.append
    for proc in procs:
        await proc.close(close_ms=1000)


# ---- decoding -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "frame", "repaired"),
    [
        (rb'{"t":"a\ud800b"}', {"t": "a\ufffdb"}, 1),
        (rb'{"t":"\uDBFF\uDC00x\uDFFF"}', {"t": "\U0010fc00x\ufffd"}, 1),  # a pair joins, a low half alone does not
        (rb'{"\ud800":["\udc00",{"k":"\uD9AB"}]}', {"\ufffd": ["\ufffd", {"k": "\ufffd"}]}, 3),
        (rb'{"pair":"\ud83d\ude00"}', {"pair": "\U0001f600"}, 0),
        (rb'{"escaped":"\\ud800"}', {"escaped": "\\ud800"}, 0),  # an escaped backslash, then text
    ],
)
def test_a_lone_surrogate_escape_is_decoded_as_u_fffd_and_counted(line, frame, repaired):
    assert decode_frame_repaired(line) == (frame, repaired)


@pytest.mark.parametrize(
    "line",
    [
        b'{"deep":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b'{"deep":' + b"[" * 5_000 + b'"\\ud800"' + b"]" * 5_000 + b"}",
    ],
)
def test_a_frame_nested_too_deeply_is_a_frame_error_not_a_crash(line):
    with pytest.raises(FrameError, match="nested too deeply"):
        decode_frame_repaired(line)


async def test_the_process_counts_every_repair_on_its_stdout(tmp_path, closer):
    payload = b'{"a":"\\ud800"}\n{"b":"fine"}\n{"c":"\\udfff\\udfff"}\n'
    proc = await JsonLineProcess.spawn(
        script(
            tmp_path,
            f"""
        import sys
        sys.stdout.buffer.write({payload!r})
        sys.stdout.flush()
        sys.stdin.read()
    """,
        )
    )
    closer(proc)
    frames = [await proc.read_frame() for _ in range(3)]
    assert frames == [{"a": "\ufffd"}, {"b": "fine"}, {"c": "\ufffd\ufffd"}]
    assert proc.text_repaired == 3


# ---- a closed stdin -----------------------------------------------------------------------------

CLOSES_STDIN = """
    import os, time
    os.close(0)
    time.sleep(60)
"""


async def test_a_child_that_closes_its_stdin_is_noticed_with_nothing_to_write(tmp_path, closer):
    proc = await JsonLineProcess.spawn(script(tmp_path, CLOSES_STDIN))
    closer(proc)
    lost: list = []
    reader = FrameReader(proc, dispatch=lambda _frame: None, fail=lost.append, closing=lambda: False, label="t")
    reader.start()
    await eventually(lambda: bool(lost), timeout=10, what="the reader to report the closed stdin")
    assert isinstance(lost[0], StdinClosed) and proc.running
    reader.stop()


async def test_closing_stdin_ourselves_is_not_reported(tmp_path):
    proc = await JsonLineProcess.spawn(script(tmp_path, "import sys; sys.stdin.read()"))
    lost: list = []
    reader = FrameReader(proc, dispatch=lambda _frame: None, fail=lost.append, closing=lambda: True, label="t")
    reader.start()
    await proc.close(close_ms=1000)
    await proc.wait_stdin_lost()
    assert all(getattr(exc, "expected", False) for exc in lost)
    reader.stop()


# ---- pacing -------------------------------------------------------------------------------------


class ScriptedTurn(QueuedTurn):
    """The smallest concrete QueuedTurn: events go in through ``emit`` and ``finish``."""

    def emit(self, event) -> None:
        self._emit(event)

    def finish(self, event) -> None:
        self._finish(event)

    async def cancel(self) -> None:
        pass

    def _poison(self) -> None:
        pass

    def _finished(self) -> None:
        pass


async def test_a_full_backlog_holds_the_reader_until_the_consumer_drains_it():
    turn = ScriptedTurn("t")
    for _ in range(BACKLOG_EVENTS):
        turn.emit(ContentDelta("x"))
    waiting = asyncio.ensure_future(turn.wait_for_room())
    await asyncio.sleep(0)  # let it start waiting (one loop pass, not a timed wait)
    assert not waiting.done()
    events = turn.events()
    await events.__anext__()  # the lane takes one: there is room again
    await asyncio.wait_for(waiting, 5)


async def test_a_terminal_gets_in_however_full_the_backlog_and_releases_the_reader():
    turn = ScriptedTurn("t")
    for _ in range(BACKLOG_EVENTS * 2):
        turn.emit(ContentDelta("x"))
    turn.finish(TurnCompleted())
    await asyncio.wait_for(turn.wait_for_room(), 5)
    seen = [event async for event in turn.events()]
    assert seen[-1] == TurnCompleted() and len(seen) == BACKLOG_EVENTS * 2 + 1


async def test_an_abandoned_turn_drops_its_backlog_but_keeps_its_terminal_and_never_holds_the_reader():
    turn = ScriptedTurn("t")
    for _ in range(BACKLOG_EVENTS):
        turn.emit(ContentDelta("x"))
    turn.abandon()
    turn.emit(ContentDelta("ignored"))
    await asyncio.wait_for(turn.wait_for_room(), 5)
    turn.finish(TurnCompleted())
    assert [event async for event in turn.events()] == [TurnCompleted()]


FLOODS = """
    import sys
    line = b'{"t":"' + b"x" * 1000 + b'"}\\n'
    for _ in range(5000):  # 5 MB: far more than the pipe and one read chunk hold
        sys.stdout.buffer.write(line)
    sys.stdout.flush()
    open(sys.argv[1], "w").close()
    sys.stdin.read()
"""


def blocked_writing(pid: int) -> bool:
    """The kernel's word for where the process sleeps: ``pipe_write`` or ``anon_pipe_write``."""
    return Path(f"/proc/{pid}/wchan").read_text().endswith("pipe_write")


async def test_a_paced_reader_leaves_a_flooding_child_blocked_on_its_pipe(tmp_path, closer):
    done = tmp_path / "done"
    proc = await JsonLineProcess.spawn([*script(tmp_path, FLOODS), str(done)])
    closer(proc)
    gate = asyncio.Event()
    frames: list = []

    async def pace() -> None:
        if len(frames) >= 10:
            await gate.wait()

    reader = FrameReader(
        proc, dispatch=frames.append, fail=lambda _exc: None, closing=lambda: False, label="t", pace=pace
    )
    reader.start()
    await eventually(
        lambda: len(frames) >= 10 and blocked_writing(proc.pid),
        timeout=10,
        what="the child to block writing into a full pipe",
    )
    assert len(frames) == 10 and not done.exists()
    gate.set()
    await eventually(done.exists, timeout=20, what="the child to finish once the reader reads on")
    await eventually(lambda: len(frames) == 5000, timeout=20, what="every frame")
    reader.stop()

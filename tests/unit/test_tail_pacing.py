"""The SSE tail's pacing (rooms/tail.py ``Tail``): a broadcast that woke many streams holds the next
one for a while (fan-out takes a bounded share of the loop's CPU); one that woke a single stream
does not, so a lone stream's next commit or delta goes out at once (D75). Whether the next
broadcast waited is read from the inboxes' signals, under a loop clock that stands still."""

from __future__ import annotations

import asyncio
import time

import pytest

from rooms.tail import Inbox, Tail


def _spend_cpu(seconds: float) -> None:
    # What a broadcast's writes cost the loop's thread: the pace is that CPU time, times PACE.
    began = time.thread_time()
    while time.thread_time() - began < seconds:
        pass


def _after_one_broadcast_is_the_next_held(streams: int) -> bool:
    async def run() -> bool:
        loop = asyncio.get_running_loop()
        # The loop's clock stands still: the pace is ``PACE`` times a few milliseconds of CPU, which a
        # loaded machine can let pass between the two broadcasts, and the question is not how long it is.
        now = loop.time()
        loop.time = lambda: now  # type: ignore[method-assign]
        tail = Tail(loop, head=0)
        inboxes = [Inbox(loop, max_frames=64, max_bytes=1 << 20) for _ in range(streams)]
        for inbox in inboxes:
            inbox.waiting = True  # parked in signal.wait(), as rooms/sse.py leaves a stream
            tail.join(inbox)
        try:
            tail._offer_transient({"type": "turn.content.delta", "body": {"n": 1}}, '{"n":1}')
            assert all(inbox.signal.is_set() for inbox in inboxes)  # the first broadcast: at once
            _spend_cpu(0.002)
            for inbox in inboxes:  # each stream sends its frames and parks again
                inbox.signal.clear()
                inbox.take_transients()
                tail.parked(inbox)
            tail._offer_transient({"type": "turn.content.delta", "body": {"n": 2}}, '{"n":2}')
            return not any(inbox.signal.is_set() for inbox in inboxes)
        finally:
            for inbox in inboxes:
                tail.leave(inbox)

    return asyncio.run(run())


def test_a_broadcast_that_woke_one_stream_does_not_hold_the_next_one():
    assert _after_one_broadcast_is_the_next_held(streams=1) is False


@pytest.mark.parametrize("streams", [2, 8])
def test_a_broadcast_that_woke_several_streams_holds_the_next_one(streams):
    assert _after_one_broadcast_is_the_next_held(streams=streams) is True

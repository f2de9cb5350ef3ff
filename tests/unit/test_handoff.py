"""A database call's posts to its loop travel with its result (groupx_site/speedups/handoff.py, D60).

The writer thread's calls are run as the server runs them (not inline): the call's commits post the
tail's frames and the lanes' wake-ups to the loop that awaits the call, and all of it must reach the
loop in one wake-up, in order, before the caller resumes. A loop that counts its thread-safe
wake-ups tells one from three.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from groupx_site.speedups import handoff
from groupx_site.store import db


class CountingLoop(asyncio.SelectorEventLoop):
    def __init__(self):
        super().__init__()
        self.wakeups = 0

    def call_soon_threadsafe(self, callback, *args, context=None):
        self.wakeups += 1
        return super().call_soon_threadsafe(callback, *args, context=context)


def run(main) -> None:
    loop = CountingLoop()
    try:
        loop.run_until_complete(main(loop))
    finally:
        loop.close()


@pytest.fixture
def threaded_calls(settings):
    settings.GROUPX_DB_INLINE = False  # the server's way: a call runs on the writer thread


def test_a_calls_posts_and_its_result_reach_the_loop_in_one_wakeup_posts_first(threaded_calls):
    seen = []

    async def main(loop):
        def call():
            handoff.post(loop, seen.append, "frames committed")
            handoff.post(loop, seen.append, "lanes woken")
            return "result"

        seen.append(await db.write(call)())
        assert loop.wakeups == 1

    run(main)
    assert seen == ["frames committed", "lanes woken", "result"]


def test_a_failing_call_still_delivers_what_it_posted_before_its_error(threaded_calls):
    seen = []

    async def main(loop):
        def call():
            handoff.post(loop, seen.append, "the first commit's frames")
            raise ValueError("the second statement failed")

        with pytest.raises(ValueError, match="second statement"):
            await db.write(call)()
        assert loop.wakeups == 1

    run(main)
    assert seen == ["the first commit's frames"]


def test_a_post_from_a_thread_outside_any_call_goes_at_once(threaded_calls):
    seen = []

    async def main(loop):
        done = asyncio.Event()
        thread = threading.Thread(
            target=lambda: (handoff.post(loop, seen.append, "at once"), handoff.post(loop, done.set))
        )
        thread.start()
        await done.wait()
        thread.join()
        assert loop.wakeups == 2

    run(main)
    assert seen == ["at once"]


def test_a_post_from_the_loops_own_thread_runs_without_waking_the_loop(threaded_calls):
    seen = []

    async def main(loop):
        done = asyncio.Event()
        handoff.post(loop, seen.append, "a delta the lane published")
        handoff.post(loop, done.set)
        await done.wait()
        assert loop.wakeups == 0

    run(main)
    assert seen == ["a delta the lane published"]


def test_a_cancelled_caller_leaves_the_call_to_finish_and_its_posts_still_run(threaded_calls):
    seen = []

    async def main(loop):
        release = threading.Event()
        running, finished = asyncio.Event(), asyncio.Event()

        def call():
            loop.call_soon_threadsafe(running.set)  # directly, not with the result
            release.wait(timeout=30)
            handoff.post(loop, seen.append, "committed after the caller left")
            handoff.post(loop, finished.set)
            return "nobody reads this"

        waiting = asyncio.ensure_future(db.write(call)())
        await running.wait()
        waiting.cancel()
        release.set()
        await finished.wait()
        assert waiting.cancelled()

    run(main)
    assert seen == ["committed after the caller left"]


def test_results_that_finish_while_the_loop_is_busy_share_one_wakeup_each_calls_posts_before_its_caller(threaded_calls):
    seen = []

    async def main(loop):
        def call(number):
            def posting():
                handoff.post(loop, seen.append, f"posted by {number}")
                return number

            return posting

        async def caller(number):
            seen.append(f"caller {await db.write(call(number))()} resumed")

        callers = [asyncio.ensure_future(caller(number)) for number in range(3)]
        await asyncio.sleep(0)  # one pass of the loop: each caller runs to its await, all three calls are queued
        db.run_on_writer_thread(lambda: None)  # the loop's thread waits here until the writer ran all three
        await asyncio.gather(*callers)
        assert loop.wakeups == 1

    run(main)
    assert seen == [
        "posted by 0",
        "posted by 1",
        "posted by 2",
        "caller 0 resumed",
        "caller 1 resumed",
        "caller 2 resumed",
    ]


def test_a_cancelled_caller_in_a_shared_wakeup_leaves_the_others_their_results(threaded_calls):
    async def main(loop):
        release = threading.Event()

        def waits_for_release():
            release.wait(timeout=30)
            return "nobody reads this"

        first = asyncio.ensure_future(db.write(waits_for_release)())
        second = asyncio.ensure_future(db.write(lambda: "second")())
        await asyncio.sleep(0)  # one pass of the loop: both calls are queued
        first.cancel()
        release.set()
        db.run_on_writer_thread(lambda: None)  # both finished: their results share one wake-up
        assert await second == "second"
        assert first.cancelled()
        assert loop.wakeups == 1

    run(main)


def test_a_delivery_to_a_closed_loop_is_dropped_and_leaves_nothing_behind():
    loop = asyncio.new_event_loop()
    loop.close()
    handoff.deliver(loop, pytest.fail, "a closed loop runs nothing")
    assert loop not in handoff._on_their_way


def test_a_delivery_waiting_for_a_loop_that_closed_does_not_keep_later_ones_waiting():
    seen = []
    closed = CountingLoop()
    handoff.deliver(closed, seen.append, "never drained")  # its wake-up is queued, then the loop closes
    closed.close()
    handoff.deliver(closed, seen.append, "after the close")
    assert closed not in handoff._on_their_way

    async def main(loop):
        done = asyncio.Event()
        thread = threading.Thread(target=lambda: handoff.deliver(loop, done.set))
        thread.start()
        await done.wait()
        thread.join()

    run(main)
    assert seen == []


def test_the_writer_runs_calls_in_arrival_order_on_its_one_named_thread(threaded_calls):
    threads = []

    async def main(loop):
        def call(number):
            return lambda: threads.append((number, threading.current_thread().name))

        await asyncio.gather(*(db.write(call(number))() for number in range(5)))

    run(main)
    assert [number for number, _ in threads] == [0, 1, 2, 3, 4]
    assert {name for _, name in threads} == {f"{db.WRITER_THREAD}_0"}


def test_run_on_writer_thread_returns_its_value_or_raises_its_error_and_the_writer_goes_on():
    assert db.run_on_writer_thread(lambda: threading.current_thread().name) == f"{db.WRITER_THREAD}_0"
    with pytest.raises(ZeroDivisionError):
        db.run_on_writer_thread(lambda: 1 / 0)
    assert db.run_on_writer_thread(lambda: "still running") == "still running"

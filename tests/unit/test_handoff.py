"""A database call's posts to its loop travel with its result (groupx_site/core/handoff.py, D60).

The writer thread's calls are run as the server runs them (not inline): the call's commits post the
tail's frames and the lanes' wake-ups to the loop that awaits the call, and all of it must reach the
loop in one wake-up, in order, before the caller resumes. A loop that counts its thread-safe
wake-ups tells one from three.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from groupx_site.core import db, handoff


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
        thread = threading.Thread(target=lambda: (handoff.post(loop, seen.append, "at once"),
                                                  handoff.post(loop, done.set)))
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

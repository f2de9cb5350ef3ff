"""A database call that raises leaves no reference cycle for the garbage collector (D76).

The error of a call that raised comes back through the call's future; its traceback keeps the
awaiting frame, and a frame that still held the future kept the error, so every refused post's
request and response waited for a collection instead of being freed when it ended. (A reader
call's error still does: ``concurrent.futures``' worker frame holds the work item, whose arguments
hold the future; its code is not ours. Nor does a groupable call's error when it shares a commit:
``group_commit._run_in_one_transaction``'s frame keeps the calls and their outcomes, D76.)
"""

from __future__ import annotations

import asyncio

import pytest

from groupx_site.store import db
from tests.unit.collector import garbage_after


class Refused(Exception):
    pass


def refuse():
    raise Refused("no room in the queue")


@pytest.fixture
def threaded_calls(settings):
    settings.GROUPX_DB_INLINE = False  # the server's way: a call runs on the writer thread


def garbage_left_by(call) -> list:
    """The errors of ``call`` left for the collector (the loop's own cycles are not the subject)."""

    async def refused():
        try:
            await call()
        except Refused:
            return
        raise AssertionError("the call did not raise")

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(refused())  # the first call's thread and imports are not the subject
        left = garbage_after(lambda: loop.run_until_complete(refused()))
        return [garbage for garbage in left if isinstance(garbage, Refused)]
    finally:
        loop.close()


@pytest.mark.parametrize("group_commit", [False, True], ids=["plain", "groupable_run_alone"])
def test_a_writer_call_that_raises_leaves_no_cycle_for_the_collector(threaded_calls, group_commit):
    assert garbage_left_by(db.write(refuse, group_commit=group_commit)) == []

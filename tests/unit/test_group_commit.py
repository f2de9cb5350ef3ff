"""Write calls queued together share one SQLite commit, each all-or-nothing (group_commit.py, D68).

The real writer thread (not inline) and its real connection to the tier's file database. A call
that blocks the writer lets the calls behind it queue up; released, the writer finds them queued
together. The observables: when each call's ``on_commit`` work runs, which rows the table holds,
and what each caller gets back."""

from __future__ import annotations

import asyncio
import threading

import pytest
from django.db import IntegrityError, connection, transaction

from groupx_site.store import db, store_faults
from tests.unit.writer_sql import on_writer as _on_writer

pytestmark = [
    pytest.mark.skipif(connection.vendor != "sqlite", reason="groups form on SQLite only"),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def table(settings):
    settings.GROUPX_DB_INLINE = False  # the server's way: the calls run on the writer thread
    _on_writer("CREATE TABLE grouped_parent (id INTEGER PRIMARY KEY)")
    _on_writer(
        "CREATE TABLE grouped (name TEXT, parent INTEGER REFERENCES grouped_parent (id) DEFERRABLE INITIALLY DEFERRED)"
    )
    yield
    _on_writer("DROP TABLE grouped")
    _on_writer("DROP TABLE grouped_parent")
    db.run_on_writer_thread(lambda: connection.close())  # later tests get a connection with the defaults
    store_faults.clear()


def _rows() -> list[str]:
    return sorted(name for (name,) in _on_writer("SELECT name FROM grouped"))


def inserting(name: str, seen: list[str], *, then=None, parent: int | None = None):
    def call() -> str:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("INSERT INTO grouped VALUES (%s, %s)", (name, parent))
            transaction.on_commit(lambda: seen.append(f"{name} committed"))
            seen.append(f"{name} ran")
            if then is not None:
                then()
        return name

    return call


async def queued_together(calls) -> list:
    """Each call's outcome (its result or its exception), the calls queued behind one that blocks
    the writer until all of them are queued."""
    release = threading.Event()
    blocker = asyncio.ensure_future(db.write(lambda: release.wait(timeout=30))())
    await asyncio.sleep(0)  # one pass of the loop: the blocker is queued first
    outcomes = [asyncio.ensure_future(db.write(call, group_commit=True)()) for call in calls]
    await asyncio.sleep(0)  # one pass of the loop: every call is queued behind it
    release.set()
    await blocker
    return await asyncio.gather(*outcomes, return_exceptions=True)


def test_write_calls_queued_together_commit_once_after_the_last_of_them_ran(table):
    seen = []
    outcomes = asyncio.run(queued_together([inserting(name, seen) for name in ("a", "b", "c")]))
    assert outcomes == ["a", "b", "c"]
    assert seen == ["a ran", "b ran", "c ran", "a committed", "b committed", "c committed"]
    assert _rows() == ["a", "b", "c"]


def test_a_call_that_fails_in_a_group_rolls_back_alone_and_only_its_caller_hears_of_it(table):
    seen = []

    def fail():
        raise ValueError("b changed its mind")

    outcomes = asyncio.run(
        queued_together([inserting("a", seen), inserting("b", seen, then=fail), inserting("c", seen)])
    )
    assert outcomes[0] == "a" and outcomes[2] == "c"
    assert isinstance(outcomes[1], ValueError)
    assert seen == ["a ran", "b ran", "c ran", "a committed", "c committed"]
    assert _rows() == ["a", "c"]


def test_a_store_fault_in_a_group_fails_every_call_of_it_and_writes_nothing_the_rest_run_alone(table):
    seen = []
    pages = _on_writer("PRAGMA page_count")[0][0]
    _on_writer(f"PRAGMA max_page_count = {pages + 1}")  # this connection's disk is full after one page
    # Earlier tests of the tier leave free pages in the file, which a row fills before the file
    # grows: the overflowing row is larger than all of them.
    free_bytes = _on_writer("PRAGMA freelist_count")[0][0] * _on_writer("PRAGMA page_size")[0][0]
    overflowing = free_bytes + 200_000

    def overflow():
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO grouped VALUES (randomblob(%s), NULL)", (overflowing,))

    outcomes = asyncio.run(
        queued_together([inserting("a", seen), inserting("b", seen, then=overflow), inserting("c", seen)])
    )
    assert [type(outcome) for outcome in outcomes[:2]] == [store_faults.StoreUnavailable] * 2
    assert outcomes[0] is not outcomes[1]
    assert outcomes[0].code == "STORE_UNAVAILABLE" and outcomes[0].kind == "disk_full"
    assert outcomes[2] == "c"  # after the group, on its own (a fresh connection: its disk has room)
    assert seen == ["a ran", "b ran", "c ran", "c committed"]
    assert _rows() == ["c"]


def test_a_commit_that_fails_fails_every_call_of_the_group_and_writes_nothing(table):
    seen = []
    outcomes = asyncio.run(
        queued_together([inserting("a", seen), inserting("b", seen, parent=404), inserting("c", seen)])
    )
    assert all(isinstance(outcome, IntegrityError) for outcome in outcomes), outcomes
    assert seen == ["a ran", "b ran", "c ran"]
    assert _rows() == []


def test_a_call_that_may_not_share_a_commit_ends_the_group_and_runs_after_it_in_order(table):
    seen = []

    async def main():
        release = threading.Event()
        blocker = asyncio.ensure_future(db.write(lambda: release.wait(timeout=30))())
        await asyncio.sleep(0)  # one pass of the loop: the blocker is queued first
        calls = [
            db.write(inserting("a", seen), group_commit=True)(),
            db.write(inserting("b", seen))(),
            db.write(inserting("c", seen), group_commit=True)(),
        ]
        outcomes = [asyncio.ensure_future(call) for call in calls]
        await asyncio.sleep(0)  # one pass of the loop: all three are queued behind the blocker
        release.set()
        await blocker
        return await asyncio.gather(*outcomes)

    assert asyncio.run(main()) == ["a", "b", "c"]
    assert seen == ["a ran", "a committed", "b ran", "b committed", "c ran", "c committed"]

"""Write calls that share one SQLite commit (docs/DECISIONS.md D68).

A write call of a Turn spends about a quarter of its CPU on its transaction's edges: BEGIN
IMMEDIATE (SQLite's write lock, the WAL index) and COMMIT (the changed pages appended to the WAL).
In the throughput workload three calls in four find others already queued behind them on the
writer thread. ``run_together`` runs such a group in one transaction and commits once:

- each call runs as it would alone, its own ``transaction.atomic()`` blocks now savepoints: a call
  whose block fails rolls back to its savepoint, and its exception reaches only its caller;
- the results (and what the calls posted to the loop, their ``on_commit`` work included) are
  delivered after the one commit, so no caller hears "done" before its rows are durable;
- a store fault in a call (disk full, I/O error: SQLite may then roll back the whole transaction),
  a transaction that is gone after a call, or a COMMIT that fails, fails every call of the group
  that had not failed on its own, with the same 503 STORE_UNAVAILABLE: nothing of the group is
  written. The calls not run yet run afterwards, each in its own transaction.

Only calls marked ``group_commit=True`` by ``db.write`` join a group (the hot calls of a Turn,
whose transactions were reviewed for it: nothing in them needs to run outside a transaction or
alone), only on SQLite (PostgreSQL keeps one transaction per call), only calls from one loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Callable

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections, transaction

from groupx_site.speedups import handoff, switches
from groupx_site.store import store_faults, store_integrity

# A group's first caller waits for the others: at most this many calls share a commit.
MOST_CALLS = 8

Call = tuple  # (loop, future, context, fn, args, kwargs), as db.py queues it
Outcome = tuple  # (future, result, error)


class _GroupFailed(Exception):
    def __init__(self, error: BaseException):
        self.error = error


def available() -> bool:
    """Whether calls may share a commit on this thread's connection (with the ``groupCommit``
    speedup off, each write call commits by itself)."""
    return connection.vendor == "sqlite" and switches.is_on("groupCommit")


def run_together(calls: list[Call], run_alone: Callable[..., None], deliver: Callable[..., None]) -> None:
    """Run ``calls`` (from one loop) in one transaction and deliver their outcomes after it;
    ``run_alone(*call)`` runs one call by itself, ``deliver(loop, future, posts, result, error)``
    hands one outcome to its loop."""
    loop: asyncio.AbstractEventLoop = calls[0][0]
    outcomes: list[Outcome] = []
    with handoff.collecting(loop) as posts:
        failure = _run_in_one_transaction(calls, outcomes)
    if failure is not None:
        outcomes = [
            (future, None, error if error is not None else _same_fault(failure)) for future, _result, error in outcomes
        ]
    for index, (future, result, error) in enumerate(outcomes):
        deliver(loop, future, posts if index == 0 else [], result, error)
    for call in calls[len(outcomes) :]:  # not run: the group failed before them
        run_alone(*call)


def _run_in_one_transaction(calls: list[Call], outcomes: list[Outcome]) -> BaseException | None:
    """Fills ``outcomes`` for the calls it ran; what failed the group (a store fault, a COMMIT's
    error), or None."""
    db = connections[DEFAULT_DB_ALIAS]  # this thread's connection, not the proxy's lookup per check
    try:
        with transaction.atomic():
            for _loop, future, context, fn, args, kwargs in calls:
                try:
                    outcomes.append((future, context.run(fn, *args, **kwargs), None))
                except BaseException as raised:  # this caller's; the others go on if the transaction is whole
                    outcomes.append((future, None, raised))
                    if isinstance(raised, store_faults.StoreUnavailable):
                        raise _GroupFailed(raised) from None
                if not _transaction_whole(db):
                    raise _GroupFailed(_transaction_lost())
    except _GroupFailed as failed:
        _close_if_outside_a_transaction()
        return failed.error
    except (DatabaseError, sqlite3.Error) as error:  # the COMMIT (or the savepoints' bookkeeping)
        fault = store_faults.as_store_unavailable(error)
        if fault is None:
            store_integrity.note_if_damaged(error)
            fault = error
        _close_if_outside_a_transaction()
        return fault
    except BaseException as error:  # whatever ends the group, the writer thread must go on
        return error
    return None


def _transaction_whole(db) -> bool:
    raw = db.connection
    return db.in_atomic_block and not db.needs_rollback and raw is not None and raw.in_transaction


def _transaction_lost() -> store_faults.StoreUnavailable:
    # SQLite rolled the whole transaction back (a full disk or an I/O error the call kept to
    # itself): a store fault, for health too. Django's own mark (an error it could not undo inside
    # a block without a savepoint) is a bug of the call, not the store's: the group fails the same
    # way, and health is left alone.
    raw = connection.connection
    if raw is None or not raw.in_transaction:
        store_faults.record("io_error")
    return store_faults.StoreUnavailable("io_error")


def _same_fault(failure: BaseException) -> BaseException:
    # One exception object per caller: each awaiting task adds its own traceback to what it raises.
    if isinstance(failure, store_faults.StoreUnavailable):
        return store_faults.StoreUnavailable(failure.kind)
    return failure


def _close_if_outside_a_transaction() -> None:
    # As db._faults_as_codes does for a call alone: a connection that met a store fault may hold a
    # half-done state, or stay read-only after the folder is writable again; the next call opens
    # a fresh one.
    if not connection.in_atomic_block:
        with contextlib.suppress(DatabaseError):
            connection.close()


__all__ = ["MOST_CALLS", "available", "run_together"]

"""Message search's FTS5 index, kept up in batches (docs/DECISIONS.md D80).

A message is in the log the moment its transaction commits; it enters the index with the next
batch, which indexes every message past ``indexed_through`` in one statement: one FTS5 segment per
batch rather than one per transaction that held a message (and the merges those segments cost),
which took ~0.15 ms of the writer thread's ~1.9 per throughput Turn. A runtime runs a batch at
start and then about once a second while the log moves (``keep_up``). Search meanwhile matches the
messages past the mark with a function that folds case as the index does
(``groupx_site/store/text_search.py``), so its answer is the same whether or not a batch took them.

The mark moves in the batch's own transaction, so a crash leaves index and mark in step: the next
batch takes whatever the last one did not. On PostgreSQL there is no index of ours: nothing here runs.
"""

from __future__ import annotations

import asyncio
import logging

from django.conf import settings
from django.db import connection, transaction

from groupx_site.core import sqlite
from groupx_site.core.background import BackgroundTask
from groupx_site.store import db
from groupx_site.store.store_faults import StoreUnavailable

logger = logging.getLogger("groupx.search_index")

FTS_TABLE = "rooms_message_fts"
VIEW = "rooms_message_text"  # message.created content by seq (rooms/migrations/0002)
MARK_TABLE = "rooms_message_fts_mark"  # one row (rooms/migrations/0004)
INDEXED_THROUGH_SQL = f"SELECT indexed_through FROM {MARK_TABLE}"
# Seqs per batch: a long backlog (a database from before 0004 never has one; a bulk import might)
# is indexed in steps that the room's own writes interleave with.
BATCH_SEQS = 5_000
INTERVAL_SECONDS = 1.0


def applies() -> bool:
    return settings.DATABASES["default"]["ENGINE"] == sqlite.ENGINE


def behind() -> bool:
    """Whether the log holds events past the mark (a read: the idle room's check costs no write)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COALESCE(MAX(seq), 0) > ({INDEXED_THROUGH_SQL}) FROM rooms_event")
        return bool(cursor.fetchone()[0])


def index_next_batch() -> bool:
    """Index the messages of the next ``BATCH_SEQS`` seqs past the mark and move the mark, in one
    transaction; True when the log holds more past it."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SELECT ({INDEXED_THROUGH_SQL}), COALESCE(MAX(seq), 0) FROM rooms_event")
        mark, head = cursor.fetchone()
        if head <= mark:
            return False
        through = min(head, mark + BATCH_SEQS)
        cursor.execute(
            f"INSERT INTO {FTS_TABLE}(rowid, content) SELECT seq, content FROM {VIEW} WHERE seq > %s AND seq <= %s",
            [mark, through],
        )
        cursor.execute(f"UPDATE {MARK_TABLE} SET indexed_through = %s", [through])
        return through < head


def index_everything() -> None:
    """Every batch until the mark is at the head, on this thread (the tests' catch-up; a runtime's
    indexer is ``keep_up``, one writer call per batch)."""
    while index_next_batch():
        pass


async def keep_up() -> None:
    """A runtime's indexer: a batch at start, then one whenever the log has moved, each tick."""
    while True:
        try:
            if await db.read(behind)():
                while await db.write(index_next_batch)():
                    pass
        except StoreUnavailable as fault:  # a full or read-only disk: the next tick tries again
            logger.debug("message search index not kept up: %s", fault.message)
        except Exception:  # the task must outlive anything a batch meets; search reads the tail meanwhile
            logger.exception("message search index batch failed")
        await asyncio.sleep(INTERVAL_SECONDS)


_indexer = BackgroundTask("groupx-search-index", keep_up)
stop = _indexer.stop


def start() -> None:
    """Start this process's indexer on the running loop (idempotent); nothing on PostgreSQL."""
    if applies():
        _indexer.start()

"""Message search's index, filled in batches (docs/DECISIONS.md D80): a message is found by search
from the moment it is in the log, through LIKE until a batch takes it and through the index after;
hand edits keep the index true; nothing is indexed twice or left out."""

from __future__ import annotations

import pytest
from django.db import connection

from rooms import history, search_index
from rooms.models import Event
from tests.unit.room import post

pytestmark = pytest.mark.skipif(connection.vendor != "sqlite", reason="the FTS5 index is SQLite's only")


def found(query: str) -> list[int]:
    return [item["seq"] for item in history.search(query, None, 50)["items"]]


def in_index(term: str) -> list[int]:
    """The seqs the index itself holds ``term`` for (a scan of an external-content table would
    read the log, not the index)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT rowid FROM {search_index.FTS_TABLE} WHERE {search_index.FTS_TABLE} MATCH %s ORDER BY rowid",
            [f'"{term}"'],
        )
        return [row[0] for row in cursor.fetchall()]


def indexed_through() -> int:
    with connection.cursor() as cursor:
        cursor.execute(search_index.INDEXED_THROUGH_SQL)
        return cursor.fetchone()[0]


def index_is_whole() -> bool:
    """FTS5's own check of an external-content index against its content (raises when corrupt)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {search_index.FTS_TABLE}({search_index.FTS_TABLE}, rank) VALUES ('integrity-check', 1)"
        )
    return True


def message_seq(accepted: dict) -> int:
    return Event.objects.get(event_id=accepted["messageEventId"]).seq


def test_a_new_message_is_found_before_its_batch_through_like_and_after_it_through_the_index():
    seq = message_seq(post(content="the deployment of Tuesday"))
    assert in_index("deployment") == [] and indexed_through() < seq

    before = found("deployment tuesday")
    assert search_index.behind()
    search_index.index_everything()

    assert before == found("deployment tuesday") == [seq]
    assert in_index("deployment") == [seq] and indexed_through() == Event.objects.order_by("-seq").first().seq
    assert not search_index.behind()
    assert index_is_whole()


def test_a_message_not_yet_indexed_matches_any_letter_in_either_case_as_the_index_does():
    seq = message_seq(post(content="Die ÄRZTE in ÖSTERREICH"))  # LIKE folds ASCII letters only
    queries = ("ärzte", "Österreich", "äRZTE öst")

    before = {query: found(query) for query in queries}
    search_index.index_everything()

    assert before == {query: found(query) for query in queries} == dict.fromkeys(queries, [seq])


def test_a_batch_indexes_the_messages_only_and_never_the_same_one_twice():
    seqs = [message_seq(post(content=f"note {i} agent:alpha")) for i in range(3)]
    search_index.index_everything()
    search_index.index_everything()

    assert in_index("note") == seqs  # once each (a second copy would fail the integrity check)
    # The Turns' queued events name agent:alpha in their bodies too; only the messages were indexed.
    assert in_index("agent:alpha") == seqs and Event.objects.exclude(event_type="message.created").exists()
    assert index_is_whole()


def test_a_long_backlog_is_indexed_in_bounded_batches(monkeypatch):
    monkeypatch.setattr(search_index, "BATCH_SEQS", 2)
    seqs = [message_seq(post(content=f"backlog {i}")) for i in range(3)]
    start = indexed_through()

    assert search_index.index_next_batch() is True
    assert indexed_through() == start + 2
    search_index.index_everything()
    assert in_index("backlog") == seqs and found("backlog") == sorted(seqs, reverse=True)


def test_hand_edits_of_indexed_and_of_not_yet_indexed_messages_keep_the_index_whole():
    indexed = message_seq(post(content="alpha original"))
    search_index.index_everything()
    pending = message_seq(post(content="beta original"))

    Event.objects.filter(seq=indexed).update(body={"content": "alpha rewritten"})
    Event.objects.filter(seq=pending).update(body={"content": "beta rewritten"})
    assert found("original") == [] and found("rewritten") == [pending, indexed]
    search_index.index_everything()
    assert found("original") == [] and found("rewritten") == [pending, indexed]
    assert index_is_whole()

    gone = message_seq(post(content="gamma retracted"))
    Event.objects.filter(seq__in=[indexed, gone]).delete()  # one indexed, one not yet
    search_index.index_everything()
    assert found("rewritten") == [pending] and found("retracted") == []
    assert in_index("alpha") == [] and in_index("retracted") == [] and in_index("beta") == [pending]
    assert index_is_whole()

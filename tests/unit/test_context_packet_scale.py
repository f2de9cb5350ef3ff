"""The Context Packet with more memory than it can show (memory/packet_groups.py, docs/DECISIONS.md
D62): each group holds the records a per-group ORM read gives, newest first and counted whole, and
a packet reads past the tables' first reads only as far as its budget takes it."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext

from memory.context import build_context_packet
from memory.models import IdentityRecord, MemoryRecord
from setup_wizard import roster
from tests.unit.room import post

ALPHA = "agent:alpha"
NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
CAP = 500  # records of one group a packet looks at (memory/packet_groups.py:GROUP_FETCH_CAP)


def _memory(n: int, scope_type: str, scope_id: str, kind: str | None = None, status: str = "active") -> MemoryRecord:
    return MemoryRecord(
        memory_id=f"mem_s{n}",
        scope_type=scope_type,
        scope_id=scope_id,
        agent_memory_type=kind,
        kind="fact",
        author_actor_id="user:local" if n % 3 else "agent:beta",
        content=f"record {n}: " + "m" * (n % 97),
        source_kind="web",
        status=status,
        created_at=NOW + timedelta(hours=n),
    )


def _identity(n: int, author: str, status: str = "active") -> IdentityRecord:
    return IdentityRecord(
        identity_id=f"idn_s{n}",
        subject_actor_id=ALPHA,
        author_actor_id=author,
        kind="note",
        content=f"identity {n}: " + "i" * (n % 89),
        source_kind="mcp",
        status=status,
        created_at=NOW + timedelta(hours=n),
    )


@pytest.fixture
def crowded() -> dict:
    """alpha's message in its correlation, with every group past the cap or near it, interleaved,
    retracted records among them, and other agents' and threads' memory around."""
    message = post([ALPHA], "what do we know?")
    correlation = message["correlationId"]
    plan = (
        [("agent", ALPHA, "core")] * 7
        + [("agent", ALPHA, "dated")]
        + [("room", "room:main", None)] * 4
        + [("correlation", correlation, None)] * 3
        + [("correlation", "cor_other", None)]
        + [("agent", "agent:beta", "core")] * 2
    )
    memory = [_memory(n, *plan[n % len(plan)], status="retracted" if n % 29 == 0 else "active") for n in range(3_600)]
    MemoryRecord.objects.bulk_create(memory, batch_size=500)
    authors = [ALPHA, "user:local", "USER:Web", "agent:beta", "agent:gamma"]
    IdentityRecord.objects.bulk_create(
        [_identity(n, authors[n % len(authors)], "superseded" if n % 31 == 0 else "active") for n in range(1_400)],
        batch_size=500,
    )
    return message


def orm_groups(correlation: str) -> dict:
    """Each group as a per-group ORM read sees it, newest first."""
    memory = MemoryRecord.objects.filter(status="active").order_by("-id")
    identity = IdentityRecord.objects.filter(status="active", subject_actor_id=ALPHA).order_by("-id")
    # "user:" ASCII case-insensitive, as the packet tests it: SQLite's LIKE, PostgreSQL's ILIKE.
    user = (
        Q(author_actor_id__startswith="user:")
        if connection.vendor == "sqlite"
        else Q(author_actor_id__istartswith="user:")
    )
    return {
        "core": memory.filter(scope_type="agent", scope_id=ALPHA, agent_memory_type="core"),
        "dated": memory.filter(scope_type="agent", scope_id=ALPHA, agent_memory_type="dated"),
        "public": memory.filter(
            Q(scope_type="room", scope_id="room:main") | Q(scope_type="correlation", scope_id=correlation)
        ),
        "self": identity.filter(author_actor_id=ALPHA),
        "user": identity.filter(user),
        "observed": identity.exclude(author_actor_id=ALPHA).exclude(user),
    }


def test_each_group_holds_the_newest_records_a_per_group_read_gives_and_counts_them_all(crowded):
    from memory.packet_groups import fetch_groups, optional_groups

    correlations = {crowded["correlationId"]}
    groups = optional_groups(ALPHA, correlations)
    fetched = fetch_groups(ALPHA, groups, correlations)
    for key, orm in orm_groups(crowded["correlationId"]).items():
        records = list(fetched[key].records())
        assert [r.id for r in records] == list(orm.values_list("id", flat=True)[:CAP]), key
        assert fetched[key].total(len(records)) == orm.count(), key
    assert fetched["core"].total(0) > CAP and fetched["dated"].total(0) < CAP


def test_a_group_the_packet_stops_reading_early_is_still_counted_whole(crowded):
    from memory.packet_groups import fetch_groups, optional_groups

    correlations = {crowded["correlationId"]}
    fetched = fetch_groups(ALPHA, optional_groups(ALPHA, correlations), correlations)
    for key, orm in orm_groups(crowded["correlationId"]).items():
        records = fetched[key].records()
        first = [next(records) for _ in range(3)]
        records.close()
        assert [r.id for r in first] == list(orm.values_list("id", flat=True)[:3]), key
        assert fetched[key].total(3) == orm.count(), key


def _memory_rows_read(captured) -> int:
    """The most rows the packet's reads of memory and identity records could return (their LIMITs).
    The prelude only asks whether any exists (EXISTS: one index entry at most per scope)."""
    reads = [
        q["sql"]
        for q in captured.captured_queries
        if re.search(r"FROM \"?memory_(memory|identity)record", q["sql"])
        and "COUNT(" not in q["sql"].upper()
        and "EXISTS (SELECT 1 FROM" not in q["sql"]
    ]
    assert all(re.search(r"LIMIT \d+", sql) for sql in reads), reads
    return sum(int(re.search(r"LIMIT (\d+)", sql).group(1)) for sql in reads)


def test_a_packet_with_no_room_left_reads_no_memory_past_the_tables_first_reads(crowded):
    # The tables' first reads (501 rows each) find them over the cap; with the budget spent on the
    # mandatory parts, nothing more of the 2,900 active records may be read, only counted (before
    # D62 each of the six groups read its own 501 rows, and all of them were rendered).
    agent = roster.live_agent(ALPHA)
    mandatory = len(build_context_packet(agent, crowded["messageEventId"], budget=1).text)
    with CaptureQueriesContext(connection) as captured:  # 10 characters: less than any entry
        packet = build_context_packet(agent, crowded["messageEventId"], budget=mandatory + 10)
    assert packet.omitted == sum(orm.count() for orm in orm_groups(crowded["correlationId"]).values())
    assert _memory_rows_read(captured) <= 2 * (CAP + 1)


def test_a_packet_reads_past_the_first_reads_about_as_much_as_it_shows(crowded):
    agent = roster.live_agent(ALPHA)
    mandatory = len(build_context_packet(agent, crowded["messageEventId"], budget=1).text)
    for room in (5_000, 40_000, 150_000):
        with CaptureQueriesContext(connection) as captured:
            packet = build_context_packet(agent, crowded["messageEventId"], budget=mandatory + room)
        shown = len(re.findall(r"^- id=(?:mem|idn)_s", packet.text, flags=re.MULTILINE))
        # at most one doubling page past what it looked at, per group statement (6 groups, 2 streams more)
        assert _memory_rows_read(captured) <= 2 * (CAP + 1) + 2 * shown + 8 * 32, room

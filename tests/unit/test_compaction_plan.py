"""Compaction's plan (memory/compaction.py:plan_compaction) at scale: it reads the room log a bounded
window at a time and stops at the input budget (at 1,000,000 uncompacted events the plan that
listed every message through the ORM held the writer thread for minutes, docs/DECISIONS.md D62),
and it is the plan the whole-list version made for the same room."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.compaction import Plan, plan_compaction, plan_from
from memory.models import ContextReset, Summary
from memory.sql import PACKET_ENTRY_COLUMNS
from memory.transcript import WATCH_BRIEF_KIND, context_events, uncompacted_after
from rooms.models import ROOM_ID, Event

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
MESSAGES = 3_000  # ~100 characters each: the 120,000-character input budget stops a pass at ~1,100


def whole_list_plan(*, through_seq: int | None = None, keep_last: int = 0) -> Plan | None:
    """The plan as it was made before D62, from every uncompacted message listed through the ORM (the
    budget's cut and the prompt, ``plan_from``, are shared): the reference."""
    lower, summary, floor = uncompacted_after()
    messages = context_events().filter(seq__gt=lower).order_by("seq")
    if through_seq is not None:
        candidates = list(messages.filter(seq__lte=through_seq).values(*PACKET_ENTRY_COLUMNS))
    else:
        total = messages.count()
        candidates = list(messages.values(*PACKET_ENTRY_COLUMNS)[: max(0, total - keep_last)])
    return plan_from(candidates, summary, floor)


def _event(n: int, **fields) -> Event:
    values = {
        "event_id": f"evt_log{n}",
        "room_id": ROOM_ID,
        "event_type": "message.created",
        "actor_id": "user:local",
        "actor_kind": "user",
        "actor_display_name": "Zoë",
        "targets": [],
        "correlation_id": f"cor_{n}",
        "root_correlation_id": f"cor_{n}",
        "occurred_at": NOW,
        "body": {"content": f"message {n}: the build on two cores needs the pinned toolchain " + "x" * (n % 40)},
    }
    return Event(**(values | fields))


@pytest.fixture
def long_room() -> int:
    """3,000 messages with what compaction must skip between them (Turn bookkeeping, watch briefs),
    a reply, a forward, an operator dispatch and one message larger than the whole input budget.
    Returns the head seq."""
    rows = []
    for n in range(MESSAGES):
        if n % 7 == 3:
            rows.append(_event(n, event_id=f"evt_turn{n}", event_type="turn.completed", body={"turnId": f"t{n}"}))
        if n % 250 == 5:
            rows.append(_event(n, event_id=f"evt_brief{n}", body={"kind": WATCH_BRIEF_KIND, "content": "hidden"}))
        if n == 1_500:
            rows.append(_event(n, event_id="evt_huge", body={"content": "h" * 130_000}))
        extra = {"reply_to_event_id": f"evt_log{n - 1}"} if n % 11 == 0 and n else {}
        if n % 13 == 0:
            extra |= {"forwarded_event_id": f"evt_log{n - 2}", "event_type": "operator.dispatch"}
        rows.append(_event(n, **extra))
    Event.objects.bulk_create(rows, batch_size=500)
    return Event.objects.order_by("-seq").values_list("seq", flat=True)[0]


def _checkpoint(head: int, state: str) -> None:
    if state in ("summary", "summary_and_reset"):
        Summary.objects.create(
            summary_id="sum_1",
            room_id=ROOM_ID,
            from_seq=1,
            through_seq=head // 3,
            content="the first third, summarised",
            generator_actor_id="agent:alpha",
            created_at=NOW,
        )
    if state in ("reset", "summary_and_reset"):
        ContextReset.objects.create(reset_id="rst_1", room_id=ROOM_ID, through_seq=head // 5, created_at=NOW)


@pytest.mark.parametrize("state", ["none", "summary", "reset", "summary_and_reset"])
def test_the_windowed_plan_is_the_plan_the_whole_list_made(long_room, state):
    _checkpoint(long_room, state)
    lower = uncompacted_after()[0]
    huge = Event.objects.get(event_id="evt_huge").seq
    for options in (
        {"keep_last": 12},
        {"keep_last": 0},
        {"keep_last": MESSAGES * 2},
        {"through_seq": long_room},
        {"through_seq": lower + 40},
        {"through_seq": lower},
        {"through_seq": huge},
        {"through_seq": huge - 1},
    ):
        assert plan_compaction(**options) == whole_list_plan(**options), options
    # A pass that starts at the oversized message: it alone, cut to the budget.
    Summary.objects.filter(status="active").update(status="superseded")
    Summary.objects.create(
        summary_id="sum_2",
        room_id=ROOM_ID,
        from_seq=1,
        through_seq=huge - 1,
        content="s",
        generator_actor_id="agent:alpha",
        created_at=NOW,
    )
    for options in ({"keep_last": 12}, {"through_seq": long_room}):
        plan = plan_compaction(**options)
        assert plan == whole_list_plan(**options) and plan.message_count == 1, options


def test_a_plan_is_one_pass_within_the_budget_and_stops_short_of_the_log(long_room):
    plan = plan_compaction(through_seq=long_room)
    assert 0 < plan.message_count < MESSAGES // 2
    assert plan.through_seq < long_room


@pytest.mark.parametrize("options", [{"through_seq": 10**9}, {"keep_last": 12}, {"keep_last": 0}])
def test_planning_reads_the_log_only_in_bounded_windows(long_room, options):
    # Every read of the room log is LIMITed: none lists, counts or sums the whole uncompacted range.
    with CaptureQueriesContext(connection) as captured:
        plan = plan_compaction(**options)
    reads = [q["sql"] for q in captured.captured_queries if Event._meta.db_table in q["sql"]]
    assert plan is not None and reads
    unbounded = [sql for sql in reads if "LIMIT" not in sql.upper()]
    assert unbounded == []
    assert len(reads) <= 2 + plan.message_count // 100, len(reads)  # windows, not a statement per row


@pytest.mark.parametrize("statement", ["_CONTEXT_WINDOW", "_CONTEXT_FROM_NEWEST"])
def test_each_window_comes_straight_off_the_seq_range_without_sorting_the_log(statement):
    # With the event_type index SQLite would sort the whole uncompacted range before the first row
    # (as the packet's unread read did, D56): the plan must walk the seq (rowid) range.
    import json

    from memory import sql as memory_sql
    from memory.transcript import CONTEXT_TYPES

    params = [ROOM_ID, *CONTEXT_TYPES, WATCH_BRIEF_KIND, 0, 10**9, json.dumps([]), 200]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + getattr(memory_sql, statement)["sqlite"], params)
        plan = " | ".join(str(row[-1]) for row in cursor.fetchall())
    assert "TEMP B-TREE" not in plan, plan
    assert "INTEGER PRIMARY KEY" in plan, plan

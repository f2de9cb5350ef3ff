"""The arithmetic and the Markdown of ``make bench-floor`` (bench/floor_table.py): pure, no timing."""

from __future__ import annotations

import pytest

from bench import floor_table

REFERENCE = {
    "kind": "reference",
    "turns": 300,
    "turns_per_s": 120.0,
    "server_ms": 7.6,
    "harness_ms": 1.4,
    "agents_ms": 0.6,
    "reply_p50_ms": 10.0,
    "reply_p95_ms": 20.0,
    "rss_mb": 200.0,
}
GROUPX = {
    "kind": "start",
    "turns": 300,
    "turns_per_s": 80.0,
    "server_ms": 8.0,
    "harness_ms": 2.0,
    "agents_ms": 0.5,
    "reply_p50_ms": 12.0,
    "reply_p95_ms": 25.0,
    "rss_mb": 100.0,
}


def test_the_ceiling_is_the_cores_filled_by_the_other_processes_cpu():
    assert floor_table.ceiling_turns_per_s(2, 2.5) == pytest.approx(800.0)
    assert floor_table.ceiling_turns_per_s(2, 0) is None


def test_the_server_budget_is_what_the_cores_leave_at_the_target_throughput():
    assert floor_table.server_budget_ms(2, 2.5, 240.0) == pytest.approx(2000 / 240 - 2.5)


def test_a_target_the_other_processes_alone_exceed_leaves_a_negative_budget():
    assert floor_table.server_budget_ms(2, 2.5, 1000.0) < 0


def test_the_ceiling_table_derives_the_budget_for_twice_the_references_throughput():
    table, derived = floor_table.ceiling_section([REFERENCE, GROUPX], cores=2)
    assert derived["target_turns_per_s"] == pytest.approx(240.0)
    assert derived["budget_ms"] == pytest.approx(2000 / 240 - 2.5)
    assert derived["one_core_budget_ms"] == pytest.approx(1000 / 240)
    assert "| GroupX `groupx start` | 300 | 80.0 | 8.00 | 0.64 | 2.00 | 0.50 | 800 |" in table


def test_the_floor_sums_the_components_and_sets_the_half_of_the_references_cpu_beside_it():
    http = [
        {"layer": "daphne_django", "us_per_request": 600.0, "label": "django", "requests_per_s": 1, "rss_mb": 1},
        {"layer": "node", "us_per_request": 60.0, "label": "node", "requests_per_s": 1, "rss_mb": 1},
    ]
    sse = [{"layer": "daphne_bare", "us_per_frame": 10.0, "label": "daphne", "frames_per_s": 1}]
    components = floor_table.floor_rows(
        http,
        sse,
        {"statements_per_turn": 38, "sqlite_ms": 1.0},
        {"pipe_ms": 0.1},
        posts_per_turn=1 / 3,
        frames_per_turn=10.0,
    )
    assert [round(ms, 3) for _, ms in components] == [0.2, 0.1, 1.0, 0.1]
    table, total = floor_table.summary_section(components, [REFERENCE, GROUPX])
    assert total == pytest.approx(1.4)
    assert "| **sum: the floor of a Turn on daphne + Django + SQLite + pipes** | **1.40** |" in table
    assert "| what the 0.5× target asks of GroupX | ≤ 3.80 |" in table


def test_the_http_table_gives_each_layer_as_a_multiple_of_nodes():
    rows = [
        {"layer": "daphne_bare", "label": "daphne", "us_per_request": 300.0, "requests_per_s": 3000, "rss_mb": 70.0},
        {"layer": "node", "label": "node", "us_per_request": 60.0, "requests_per_s": 13000, "rss_mb": 60.0},
    ]
    assert "| daphne | 300 | 5.0× | 3000 | 70.0 |" in floor_table.http_section(rows)


def test_a_floor_above_a_target_is_said_to_be_above_it():
    assert floor_table._compare(5.0, 4.0).startswith("above the target by 1.00 ms")
    assert floor_table._compare(3.0, 4.0).startswith("below the target, leaving 1.00 ms")


def test_a_profiled_frame_is_counted_for_its_package_or_standard_library_module():
    from bench.floor_profile import package

    assert package("untilConcludes (twisted/python/util.py:760)") == "twisted"
    assert package("Queue.__init__ (asyncio/queues.py:39)") == "asyncio"
    assert package("EpollSelector.select (selectors.py:468)") == "selectors"
    assert package("get (/venv/lib/python3.11/site-packages/django/http/request.py:10)") == "django"
    assert package("loads (/usr/lib/python3.11/json/__init__.py:346)") == "json"

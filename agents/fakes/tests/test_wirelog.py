"""The wire-log reader the integration tests count launches with."""

from __future__ import annotations

import json
import os

from agents.fakes import wirelog


def _write(path, *records):
    with path.open("a", encoding="utf-8") as log:
        for record in records:
            log.write(json.dumps(record) + "\n")


def test_logs_come_in_launch_order_even_when_an_older_process_writes_last(tmp_path):
    older, newer = tmp_path / "claude-100.jsonl", tmp_path / "claude-200.jsonl"
    _write(older, {"k": "start", "seq": 1, "t": 1000.0, "argv": ["--session-id"]})
    _write(newer, {"k": "start", "seq": 1, "t": 2000.0, "argv": ["--resume"]})
    _write(older, {"k": "exit", "seq": 2, "t": 3000.0, "why": "eof"})  # an orphan's late last words
    os.utime(older, (3000.0, 3000.0))
    os.utime(newer, (2000.0, 2000.0))

    starts = wirelog.read_records(tmp_path, flavor="claude", kind="start")

    assert [s["pid"] for s in starts] == [100, 200]
    assert wirelog.log_files(tmp_path) == [older, newer]


def test_a_log_with_no_whole_record_yet_sorts_by_its_modification_time(tmp_path):
    started, starting = tmp_path / "kimi-1.jsonl", tmp_path / "kimi-2.jsonl"
    _write(started, {"k": "start", "seq": 1, "t": 1000.0})
    starting.write_text('{"k": "sta', encoding="utf-8")
    os.utime(starting, (1500.0, 1500.0))

    assert wirelog.log_files(tmp_path) == [started, starting]
    assert [r["pid"] for r in wirelog.read_records(tmp_path)] == [1]

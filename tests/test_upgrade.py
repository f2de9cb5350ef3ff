"""A room written by an earlier release opens intact with this code (tests/upgrade/build.py wrote
each fixture from a real run of its release): the migrations apply, every row is still there, the
replay gives the very bytes of the old frames, and the room takes new messages. A database on which
a newer release applied migrations this code does not know is refused at start, untouched."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.agents import fake_agents, send, wait_terminal
from tests.assistant_room import assistant_config
from tests.groupx_cli import cli_env, groupx
from tests.server import GroupXServer, free_port
from tests.upgrade.build import DRIVERS, FIXTURES
from tests.upgrade.frames import VOLATILE, durable_frames, row_counts

RELEASES = sorted(path.name for path in FIXTURES.iterdir() if (path / "groupx.db").is_file())
# Rows that a migration may add: Django's bookkeeping, not the room's.
GROWS = {*VOLATILE, "auth_permission", "django_content_type"}


def room_from(release: str, workdir: Path) -> GroupXServer:
    store = workdir / ".groupx" / "groupx.db"
    store.parent.mkdir(parents=True)
    shutil.copyfile(FIXTURES / release / "groupx.db", store)
    config = {
        "agents": fake_agents(workdir, *DRIVERS),
        "timeouts": {"closeMs": 300},
        "assistant": assistant_config(workdir),
        "storage": {"path": ".groupx/groupx.db"},
    }
    return GroupXServer(workdir, config, env={"GROUPX_FAKE_TIME_SCALE": "0"})


def recorded(release: str) -> dict:
    return json.loads((FIXTURES / release / "rows.json").read_text())


def test_there_is_a_fixture_of_this_release_and_every_one_before():
    from groupx_site.runtime_identity import product_version

    assert "0.1.0" in RELEASES and product_version() in RELEASES  # a release adds its own: build.py


@pytest.mark.parametrize("release", RELEASES)
def test_a_room_of_an_earlier_release_opens_with_every_row_and_byte_identical_old_frames(release, tmp_path):
    room = room_from(release, tmp_path)
    before = recorded(release)
    room.manage("migrate", "--noinput", "-v0")  # this code's migrations on the old room
    rows = row_counts(room.sqlite_store())  # before the room runs, whose background jobs add rows
    for table, count in before["rows"].items():
        if table in GROWS:
            assert rows[table] >= count, table
        else:
            assert rows[table] == count, table
    room.start(migrate=False)
    try:
        assert durable_frames(room.base_url, before["throughSeq"]) == (FIXTURES / release / "frames.sse").read_bytes()
        # Text written by the old release reads back as it was written (emoji, CJK).
        assert "构建" in room.get("/api/memory", params={"limit": "100"}).text
        assert "🎨" in room.get("/api/identity").text
        assert "你好" in room.get("/api/assistant/messages").text
        new = send(room, ["@all"], "after the upgrade 🆙 升级之后")
        assert {wait_terminal(room, turn["turnId"])["type"] for turn in new["turns"]} == {"turn.completed"}
        db = sqlite3.connect(f"file:{room.sqlite_store()}?mode=ro", uri=True)
        try:
            (stored,) = db.execute(
                "SELECT body FROM rooms_event WHERE event_id = ?", [new["messageEventId"]]
            ).fetchone()
        finally:
            db.close()
        assert "🆙 升级之后" in stored and "\\u" not in stored  # new text is stored as UTF-8
    finally:
        room.stop()


def content_digest(store: Path) -> str:
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return hashlib.sha256("\n".join(db.iterdump()).encode()).hexdigest()
    finally:
        db.close()


def test_a_database_with_migrations_this_code_does_not_know_is_refused_at_start_and_left_untouched(tmp_path):
    store = tmp_path / ".groupx" / "groupx.db"
    store.parent.mkdir(parents=True)
    shutil.copyfile(FIXTURES / RELEASES[-1] / "groupx.db", store)
    db = sqlite3.connect(store)
    db.execute("PRAGMA journal_mode=WAL")  # as a room leaves it: opening it then changes no byte
    with db:
        db.execute(
            "INSERT INTO django_migrations (app, name, applied) VALUES "
            "('rooms', '9001_from_a_newer_release', '2027-01-01 00:00:00')"
        )
    db.close()
    digest = content_digest(store)
    port = free_port()
    (tmp_path / "groupx.json").write_text(
        json.dumps(
            {
                "server": {"host": "127.0.0.1", "port": port},
                "storage": {"path": ".groupx/groupx.db"},
                "agents": fake_agents(tmp_path, "kimi"),
                "timeouts": {"closeMs": 300},
            }
        )
    )
    env = cli_env(tmp_path)
    started = groupx("start", "--no-open", "--config", str(tmp_path / "groupx.json"), workdir=tmp_path, env=env)
    assert started.returncode == 1
    output = started.stdout + started.stderr
    refusals = [line for line in output.splitlines() if "rooms.9001_from_a_newer_release" in line]
    assert len(refusals) == 1 and refusals[0].startswith("groupx: ") and "newer GroupX" in refusals[0], output
    assert "Traceback" not in started.stderr, started.stderr
    assert content_digest(store) == digest
    doctor = groupx("doctor", "--config", str(tmp_path / "groupx.json"), workdir=tmp_path, env=env)
    assert "rooms.9001_from_a_newer_release" in doctor.stdout and "newer GroupX" in doctor.stdout, doctor.stdout
    assert doctor.returncode != 0

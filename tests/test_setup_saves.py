"""Saving the setup (``POST /api/setup``, PROTOCOL §10.6) when several pages save at once, when
the page is stale, when the file holds keys the form does not show, and when the storage path
names a file that is not a GroupX room (docs/DECISIONS.md D99, D100)."""

from __future__ import annotations

import json
import sqlite3
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.groupx_cli import groupx, write_config
from tests.server import free_port
from tests.test_setup import agent


def foreign_database(path) -> bytes:
    """Another program's SQLite file (rollback journal, one table), and its bytes."""
    db = sqlite3.connect(path)
    with db:
        db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
        db.execute("INSERT INTO notes (text) VALUES ('mine')")
    db.close()
    return path.read_bytes()


def test_many_saves_at_once_all_succeed_and_leave_one_whole_file(make_server):
    server = make_server()
    current = server.get("/api/setup").json()["config"]

    def save(index: int) -> httpx.Response:
        draft = {**current, "agents": [*current["agents"], agent(f"extra-{index}", server.workdir)]}
        return httpx.post(server.url("/api/setup"), json={"config": draft}, timeout=60)

    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(save, range(64)))

    assert sorted({answer.status_code for answer in answers}) == [200], [
        a.text for a in answers if a.status_code != 200
    ]
    written = json.loads(server.config_path.read_text())
    assert [agent_id for agent_id in written["agents"] if agent_id.startswith("extra-")] in (
        [[f"extra-{index}"] for index in range(64)]
    )
    assert not [p.name for p in server.workdir.iterdir() if p.name.endswith(".tmp")]  # no temporary file left


def test_a_save_from_a_stale_snapshot_is_a_conflict_and_the_newer_file_stays(make_server):
    server = make_server()
    first, second = server.get("/api/setup").json(), server.get("/api/setup").json()
    assert first["revision"] == second["revision"] and len(first["revision"]) == 64

    newer = server.post(
        "/api/setup", {"config": {**first["config"], "serverPort": 4411}, "revision": first["revision"]}
    )
    assert newer.status_code == 200, newer.text
    written = server.config_path.read_bytes()
    stale = server.post(
        "/api/setup", {"config": {**second["config"], "serverPort": 4412}, "revision": second["revision"]}
    )

    assert stale.status_code == 409
    error = stale.json()["error"]
    assert error["code"] == "CLIENT_COMMAND_CONFLICT"
    assert error["details"]["revision"] == newer.json()["revision"] == server.get("/api/setup").json()["revision"]
    assert server.config_path.read_bytes() == written
    again = server.post(
        "/api/setup", {"config": {**second["config"], "serverPort": 4412}, "revision": newer.json()["revision"]}
    )
    assert again.status_code == 200 and json.loads(server.config_path.read_text())["server"]["port"] == 4412


def test_a_save_keeps_every_key_of_the_file_the_form_does_not_show(make_server):
    server = make_server(
        server={"host": "127.0.0.1", "port": 4310, "threadsOnOneCpu": False},
        limits={"queuePerAgent": 7},
        timeouts={"closeMs": 300, "idleMs": 123_456},
    )
    current = server.get("/api/setup").json()["config"]
    before = json.loads(server.config_path.read_text())["server"]  # make test-plain adds speedups: false

    saved = server.post("/api/setup", {"config": {**current, "serverPort": 4499}})

    assert saved.status_code == 200, saved.text
    written = json.loads(server.config_path.read_text())
    assert written["server"] == {**before, "port": 4499} and written["server"]["threadsOnOneCpu"] is False
    assert written["limits"] == {"queuePerAgent": 7}
    assert written["timeouts"] == {"closeMs": 300, "idleMs": 123_456}


@pytest.mark.parametrize("speedups", [False, {"groupCommit": False, "walCheckpoints": True}])
def test_a_save_keeps_the_speedups_switch_as_it_was(make_server, speedups):
    server = make_server(server={"host": "127.0.0.1", "port": 4310, "speedups": speedups})
    current = server.get("/api/setup").json()["config"]

    saved = server.post("/api/setup", {"config": {**current, "serverPort": 4498}})

    assert saved.status_code == 200, saved.text
    assert json.loads(server.config_path.read_text())["server"] == {
        "host": "127.0.0.1",
        "port": 4498,
        "speedups": speedups,
    }


def test_a_storage_path_naming_another_programs_database_is_refused_and_left_untouched(make_server):
    server = make_server()
    foreign = server.workdir / "other-app.sqlite"
    before = foreign_database(foreign)
    config_before = server.config_path.read_bytes()
    current = server.get("/api/setup").json()["config"]

    refused = server.post("/api/setup", {"config": {**current, "storagePath": "other-app.sqlite"}})
    folder = server.post("/api/setup", {"config": {**current, "storagePath": "."}})

    for answer in (refused, folder):
        assert answer.status_code == 400
        assert answer.json()["error"]["code"] == "INVALID_ENVELOPE"
        [found] = answer.json()["error"]["details"]["issues"]
        assert (found["path"], found["code"]) == ("config.storagePath", "storage_not_a_room")
    assert "another program's SQLite database" in refused.json()["error"]["details"]["issues"][0]["message"]
    assert foreign.read_bytes() == before and server.config_path.read_bytes() == config_before
    assert sorted(p.name for p in server.workdir.iterdir() if p.name.startswith("other-app")) == ["other-app.sqlite"]
    # a new file and the room's own database are both fine
    for path in ("rooms/new.db", current["storagePath"]):
        assert server.post("/api/setup", {"config": {**current, "storagePath": path}}).status_code == 200


def test_groupx_start_refuses_a_storage_path_naming_another_programs_database(tmp_path):
    port = free_port()
    config = write_config(tmp_path, port, storage={"path": "other-app.sqlite"})
    before = foreign_database(tmp_path / "other-app.sqlite")

    started = groupx("start", "--config", str(config), "--no-open", workdir=tmp_path)

    assert started.returncode == 1
    assert "another program's SQLite database" in started.stderr and "Traceback" not in started.stderr, started.stderr
    assert (tmp_path / "other-app.sqlite").read_bytes() == before
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("other-app.sqlite-")]

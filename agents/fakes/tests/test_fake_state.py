"""The fakes' session store: snapshot + appended history lines (agents/fakes/_state.py)."""

from __future__ import annotations

from agents.fakes._state import StateStore


def _store(tmp_path, monkeypatch) -> StateStore:
    monkeypatch.setenv("GROUPX_FAKE_STATE_DIR", str(tmp_path))
    return StateStore("acp")


def test_a_growing_history_is_appended_and_read_back_whole(tmp_path, monkeypatch):
    store = _store(tmp_path, monkeypatch)
    history = [{"role": "user", "text": "one"}]
    store.save("s1", {"cwd": "/w", "history": history})
    inode = store._path("s1").stat().st_ino  # an atomic rewrite would replace the file
    history = [*history, {"role": "agent", "text": "two"}, {"role": "user", "text": "three"}]

    store.save("s1", {"cwd": "/w", "history": history})

    assert store._path("s1").stat().st_ino == inode
    assert len(store._path("s1").read_text().splitlines()) == 4  # the snapshot, then one line per entry
    assert StateStore("acp").load("s1") == {"id": "s1", "cwd": "/w", "history": history}


def test_a_changed_snapshot_rewrites_the_file(tmp_path, monkeypatch):
    store = _store(tmp_path, monkeypatch)
    store.save("s1", {"cwd": "/w", "history": [{"text": "a"}]})

    store.save("s1", {"cwd": "/elsewhere", "history": []})

    assert StateStore("acp").load("s1") == {"id": "s1", "cwd": "/elsewhere", "history": []}


def test_a_torn_last_line_is_skipped(tmp_path, monkeypatch):
    store = _store(tmp_path, monkeypatch)
    store.save("s1", {"cwd": "/w", "history": [{"text": "kept"}]})
    with open(store._path("s1"), "a", encoding="utf-8") as out:
        out.write('{"text": "torn')

    assert StateStore("acp").load("s1")["history"] == [{"text": "kept"}]


def test_a_snapshot_without_history_round_trips(tmp_path, monkeypatch):
    store = _store(tmp_path, monkeypatch)
    store.save("t1", {"cwd": "/w", "preview": "hi", "createdAt": 1})

    assert StateStore("acp").load("t1") == {"id": "t1", "cwd": "/w", "preview": "hi", "createdAt": 1}

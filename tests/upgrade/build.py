"""Build the upgrade fixture of this version from a real run: ``python -m tests.upgrade.build``.

A room with fake agents is started on a temporary folder and used as a person would (messages with
emoji and CJK text, Turns that complete, fail and are cancelled, a supervised Turn, memory and
identity records written, superseded and retracted, a compaction summary, a context reset, the
assistant's side chat, every command's receipt); then it is stopped and its database, the durable
SSE frames of its replay and its rows per table are written to ``tests/upgrade/fixtures/<version>/``.
``tests/test_upgrade.py`` opens a copy of every fixture there with the current code. Each release
adds its own fixture and keeps the older ones.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
import tempfile
import uuid
from pathlib import Path

from groupx_site.cli import version
from tests.agents import cancel, fake_agents, send, turn_events, wait_terminal
from tests.assistant_room import assistant_config, say
from tests.server import GroupXServer, wait_until
from tests.upgrade.frames import durable_frames, row_counts

FIXTURES = Path(__file__).resolve().parent / "fixtures"
DRIVERS = ("kimi", "codex", "claude", "hermes")
EMOJI = "🎉🚀 ready? 👩‍💻"
CJK = "你好，世界。これは日本語です。안녕하세요"


def command_id() -> str:
    return f"fixture-{uuid.uuid4().hex}"


def written(response) -> dict:
    assert response.status_code in (200, 201, 202), response.text
    return response.json()


def use_the_room(room: GroupXServer) -> None:
    """Every kind of row the product writes, through its own API."""
    for turn in send(room, ["@all"], f"{EMOJI} {CJK}")["turns"]:
        wait_terminal(room, turn["turnId"])
    failed = send(room, ["agent:kimi"], '[[fake: fail message="boom 💥"]]')["turns"][0]
    wait_terminal(room, failed["turnId"])
    hanging = send(room, ["agent:codex"], "[[fake: hang]] 长时间的任务")["turns"][0]
    wait_until(
        lambda: any(e["type"] == "turn.started" for e in turn_events(room, hanging["turnId"])),
        timeout=30,
        message="the hanging Turn to start",
    )
    cancel(room, hanging["turnId"])
    wait_terminal(room, hanging["turnId"])
    supervised = send(
        room, ["agent:claude"], "review this ✅", supervision={"observers": ["agent:hermes"], "mode": "live_steer"}
    )
    for turn in supervised["turns"]:
        wait_terminal(room, turn["turnId"])
    for i in range(13):  # more than compaction keeps, so that it writes a summary
        for turn in send(room, ["agent:kimi"], f"message {i} — {CJK[:3]} {EMOJI[:1]}")["turns"]:
            wait_terminal(room, turn["turnId"])
    fact = written(
        room.post(
            "/api/memory",
            {
                "clientCommandId": command_id(),
                "scope": {"type": "room", "id": "room:main"},
                "kind": "fact",
                "content": f"the build uses make {EMOJI[:1]}",
            },
        )
    )["memory"]
    written(
        room.post(
            f"/api/memory/{fact['memoryId']}/supersede",
            {"clientCommandId": command_id(), "content": "the build uses make 构建"},
        )
    )
    gone = written(
        room.post(
            "/api/memory",
            {
                "clientCommandId": command_id(),
                "scope": {"type": "room", "id": "room:main"},
                "kind": "decision",
                "content": "short-lived",
            },
        )
    )["memory"]
    written(room.post(f"/api/memory/{gone['memoryId']}/retract", {"clientCommandId": command_id()}))
    written(
        room.post(
            "/api/memory",
            {
                "clientCommandId": command_id(),
                "scope": {"type": "agent", "id": "agent:kimi"},
                "kind": "preference",
                "content": "answers in 中文 when asked",
            },
        )
    )
    written(
        room.post(
            "/api/identity",
            {
                "clientCommandId": command_id(),
                "subjectActorId": "agent:kimi",
                "kind": "instruction",
                "content": "Kimi reviews the front end 🎨",
            },
        )
    )
    compacted = room.post("/api/context/compact", {"clientCommandId": command_id()}, timeout=120)
    assert compacted.status_code == 200, compacted.text
    reset = room.post("/api/context/reset", {"clientCommandId": command_id()})
    assert reset.status_code == 200, reset.text
    answered = say(room, f"what is going on? {CJK[:5]}")
    assert answered.status_code == 200, answered.text
    for turn in send(room, ["agent:hermes"], "after the reset 🔁")["turns"]:
        wait_terminal(room, turn["turnId"])


def build(target: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="groupx-fixture-") as folder:
        workdir = Path(folder)
        config = {
            "agents": fake_agents(workdir, *DRIVERS),
            "timeouts": {"closeMs": 300},
            "assistant": assistant_config(workdir),
        }
        room = GroupXServer(workdir, config, env={"GROUPX_FAKE_TIME_SCALE": "0"}).start()
        try:
            wait_until(
                lambda: room.get("/api/assistant").json()["status"] not in ("disabled", "starting"),
                timeout=60,
                message="the assistant's brain to start",
            )
            use_the_room(room)
            head = room.get("/api/bootstrap").json()["room"]["throughSeq"]
            frames = durable_frames(room.base_url, head)
        finally:
            room.stop()
        store = room.sqlite_store()
        db = sqlite3.connect(store)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("PRAGMA journal_mode=DELETE")  # one file: the server turns WAL on again when it opens it
        db.execute("VACUUM")
        db.close()
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        shutil.copyfile(store, target / "groupx.db")
        (target / "frames.sse").write_bytes(frames)
        (target / "rows.json").write_text(
            json.dumps({"throughSeq": head, "rows": row_counts(target / "groupx.db")}, indent=2, sort_keys=True) + "\n"
        )


if __name__ == "__main__":
    destination = FIXTURES / (sys.argv[1] if len(sys.argv) > 1 else version())
    build(destination)
    print(f"wrote {destination}")

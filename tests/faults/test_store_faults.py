"""Store faults are codes, not crashes (issue 14, docs/DECISIONS.md D24).

A real server over a real SQLite file meets a full disk, a lock another process holds, and a
read-only file system at start; each answers 503 STORE_UNAVAILABLE naming the fault, health says
degraded while it lasts, and everything goes on by itself once it clears: no restart.

The disk faults need a small tmpfs of their own (``mount``, as root); without that they skip.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.agents import (
    active_binding,
    call_tool,
    db_rows,
    fake_agents,
    send,
    turn_events,
    wait_terminal,
    wire,
)
from tests.server import GroupXServer, wait_until
from tests.sse import SseClient

LOCKER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()  # hold the write lock until the test says so
db.execute("ROLLBACK")
"""


class Room:
    """Servers of one test on a work dir whose ``.groupx`` (the database's folder) may be a tmpfs.
    Teardown closes the streams and stops the servers first, then unmounts."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.store_dir = workdir / ".groupx"
        self.store_dir.mkdir(parents=True)
        self.mounted = False
        self.servers: list[GroupXServer] = []
        self.streams: list[SseClient] = []

    def enter(self, stream: SseClient) -> SseClient:
        self.streams.append(stream)
        return stream

    def mount_tmpfs(self, size_mib: int = 24) -> None:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs", str(self.store_dir)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"needs a tmpfs of its own (mount as root): {done.stderr.strip() or done.returncode}")
        self.mounted = True

    def remount(self, mode: str) -> None:
        subprocess.run(["mount", "-o", f"remount,{mode}", str(self.store_dir)], check=True)

    def server(self, **env: str) -> GroupXServer:
        config = {"server": {"host": "127.0.0.1", "port": 4310}, "timeouts": {"closeMs": 300},
                  "agents": fake_agents(self.workdir, "kimi")}
        server = GroupXServer(self.workdir, config, env=env)
        self.servers.append(server)
        return server

    def close(self) -> None:
        for stream in self.streams:
            stream.close()
        for server in self.servers:
            server.stop()
        if self.mounted:
            subprocess.run(["mount", "-o", "remount,rw", str(self.store_dir)], capture_output=True)
            subprocess.run(["umount", str(self.store_dir)], check=True)


@pytest.fixture
def room(tmp_path):
    room = Room(tmp_path / "room")
    try:
        yield room
    finally:
        room.close()


def post_message(server: GroupXServer, content: str):
    body = {"clientCommandId": f"t-{uuid.uuid4()}", "to": ["agent:kimi"], "content": content}
    return body["clientCommandId"], server.post("/api/messages", body, timeout=30)


def health(server: GroupXServer) -> dict:
    return server.get("/api/health").json()


def fill_disk(folder: Path) -> Path:
    """A filler file that takes every last byte of ``folder``'s file system."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for size in (1 << 20, 4096, 1):
            block = b"\0" * size
            while True:
                try:
                    os.write(fd, block)
                except OSError as error:
                    if error.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
    return filler


def truncate_wal(server: GroupXServer) -> None:
    """Checkpoint the WAL and cut it to nothing, so the server's next commit must grow it (a WAL
    reused after a checkpoint could take a few more commits on a full disk)."""
    def truncated():
        db = sqlite3.connect(server.workdir / ".groupx" / "groupx.db")
        try:
            busy, _, _ = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            return busy == 0
        finally:
            db.close()

    wait_until(truncated, message="a WAL checkpoint with no reader in the way")


def turn_started(server: GroupXServer, turn_id: str) -> bool:
    return any(e["type"] == "turn.started" and e["body"].get("turnId") == turn_id for e in server.events())


def prompts_answered(server: GroupXServer) -> int:
    """How many prompts the fake CLI has answered (its own wire log, outside the store)."""
    return sum(1 for r in wire(server, "kimi", kind="out") if "stopReason" in (r["msg"].get("result") or {}))


def is_terminal(server: GroupXServer, turn_id: str) -> bool:
    ends = {"turn.completed", "turn.failed", "turn.cancelled", "turn.interrupted"}
    return any(e["type"] in ends for e in turn_events(server, turn_id))


def test_a_full_disk_refuses_writes_with_a_code_and_the_room_goes_on_when_space_returns(room):
    room.mount_tmpfs()
    server = room.server().start()
    assert wait_terminal(server, send(server, "agent:kimi", "before")["turns"][0]["turnId"])["type"] == "turn.completed"
    # One Turn is running across the fault, another is queued behind it. (The 3 s are only room
    # for the fault to begin while the CLI still works on its answer; nothing waits on them.)
    running = send(server, "agent:kimi", "slow [[fake: sleep ms=3000; echo]]")["turns"][0]["turnId"]
    queued = send(server, "agent:kimi", "queued before the fault")["turns"][0]["turnId"]
    wait_until(lambda: turn_started(server, running), message="the slow Turn to start")
    stream = room.enter(SseClient(server.base_url, after_seq=server.get("/api/bootstrap").json()["room"]["throughSeq"]))

    truncate_wal(server)
    filler = fill_disk(room.store_dir)
    command_id, refused = post_message(server, "while the disk is full")

    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "STORE_UNAVAILABLE"
    assert "disk is full" in refused.json()["error"]["message"]
    assert refused.headers["Retry-After"].isdigit()
    assert db_rows(server, "SELECT 1 FROM rooms_clientcommand WHERE client_command_id = ?", command_id) == []
    degraded = health(server)
    assert degraded["status"] == "degraded"
    assert degraded["store"]["available"] is False and degraded["store"]["fault"] == "disk_full"
    # The slow Turn's answer arrives while nothing can be written: it waits, and so does the queue.
    wait_until(lambda: prompts_answered(server) == 2, message="the CLI to answer the slow prompt")
    assert not is_terminal(server, running)  # reads and the event stream still work on a full disk

    filler.unlink()
    after = send(server, "agent:kimi", "after the fault")["turns"][0]["turnId"]

    for turn_id in (running, queued, after):
        assert wait_terminal(server, turn_id)["type"] == "turn.completed"
    wait_until(lambda: health(server)["status"] == "ok", message="health ok again")
    # A stream opened before the fault lived through it and carries what was written after.
    stream.wait_for(lambda e: e["type"] == "turn.completed" and e["body"]["turnId"] == after)


def test_a_lock_held_by_another_process_answers_store_unavailable_and_turns_run_once_it_is_released(room):
    server = room.server(GROUPX_BUSY_TIMEOUT_MS="1000").start()
    assert wait_terminal(server, send(server, "agent:kimi", "before")["turns"][0]["turnId"])["type"] == "turn.completed"
    running = send(server, "agent:kimi", "slow [[fake: sleep ms=3000; echo]]")["turns"][0]["turnId"]
    wait_until(lambda: turn_started(server, running), message="the slow Turn to start")

    locker = subprocess.Popen([sys.executable, "-c", LOCKER, str(room.store_dir / "groupx.db")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert locker.stdout.readline().strip() == "locked"
        command_id, refused = post_message(server, "while another process holds the lock")

        assert refused.status_code == 503
        assert refused.json()["error"]["code"] == "STORE_UNAVAILABLE"
        assert "locked by another process" in refused.json()["error"]["message"]
        assert refused.headers["Retry-After"].isdigit()
        degraded = health(server)
        assert degraded["status"] == "degraded" and degraded["store"]["fault"] == "locked"
        wait_until(lambda: prompts_answered(server) == 2, message="the CLI to answer the slow prompt")
        assert not is_terminal(server, running)
        # Its Turn is still running in the store, so the agent's binding may call tools: a write
        # tool gets the same code.
        tool = call_tool(server, active_binding(server, "agent:kimi"), "publish",
                         {"content": "from an agent while locked", "clientCommandId": "p-locked"}).json()
        assert tool["result"]["isError"] is True
        assert json.loads(tool["result"]["content"][0]["text"])["code"] == "STORE_UNAVAILABLE"
    finally:
        locker.communicate("release\n", timeout=10)

    assert db_rows(server, "SELECT 1 FROM rooms_clientcommand WHERE client_command_id = ?", command_id) == []
    after = send(server, "agent:kimi", "after the lock")["turns"][0]["turnId"]
    for turn_id in (running, after):
        assert wait_terminal(server, turn_id)["type"] == "turn.completed"


def test_a_start_on_a_read_only_disk_keeps_retrying_and_becomes_ready_when_it_is_writable(room):
    room.mount_tmpfs()
    server = room.server()
    server.manage("migrate", "--noinput", "-v0")
    room.remount("ro")
    server.start(migrate=False, wait_ready=False)

    waiting = wait_until(lambda: (h := health(server)).get("startAttempts", 0) >= 2 and h,
                         message="a second start attempt")
    assert waiting["readiness"] == "starting" and waiting["status"] == "degraded"
    assert waiting["lastError"]["code"] == "STORE_UNAVAILABLE" and "nextRetryMs" in waiting
    assert waiting["store"]["available"] is False and waiting["store"]["fault"] == "read_only"
    refused = post_message(server, "too early")[1]
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "STORE_UNAVAILABLE"
    assert "read-only" in refused.json()["error"]["message"]

    room.remount("rw")

    wait_until(lambda: server.readiness() == "ready", timeout=30, message="the runtime to start by itself")
    ready = health(server)
    assert ready["status"] == "ok" and "startAttempts" not in ready
    assert wait_terminal(server, send(server, "agent:kimi", "hello")["turns"][0]["turnId"])["type"] == "turn.completed"

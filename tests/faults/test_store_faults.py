"""Store faults are codes, not crashes (docs/DECISIONS.md D24).

A real server over a real SQLite file meets a full disk (a 16 MiB tmpfs), a write lock another
process holds for 10 s, and a read-only database folder (a tmpfs remounted read-only: as root,
file modes do not stop writes); each answers 503 STORE_UNAVAILABLE naming the fault with
``Retry-After``, writes nothing (no receipt, the log's head unchanged), health says degraded while
it lasts, and everything goes on by itself once it clears, no restart, the log still gap-free.

The disk faults need a small tmpfs of their own (``mount``, as root); without that they skip. A
tmpfs with the database open cannot be remounted read-only (the kernel answers "busy"), so the
read-only case is a server that starts, or starts again after a SIGKILL, on a read-only folder.
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
    prompts_sent,
    send,
    turn_events,
    wait_terminal,
    wire,
)
from tests.server import GroupXServer, wait_until
from tests.sse import SseClient

DISK_MIB = 16
LOCK_SECONDS = 10
# Another process takes SQLite's write lock and keeps it until the test says so, and for at least
# LOCK_SECONDS in all: the fault lasts that long by the locker's own clock, while the test waits on
# answers, never on time.
LOCKER = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
taken = time.monotonic()
print("locked", flush=True)
sys.stdin.readline()
time.sleep(max(0.0, float(sys.argv[2]) - (time.monotonic() - taken)))
db.execute("ROLLBACK")
print("released", flush=True)
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

    def mount_tmpfs(self, size_mib: int = DISK_MIB) -> None:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs", str(self.store_dir)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            pytest.skip(f"needs a tmpfs of its own (mount as root): {done.stderr.strip() or done.returncode}")
        self.mounted = True

    def remount(self, mode: str) -> None:
        subprocess.run(["mount", "-o", f"remount,{mode}", str(self.store_dir)], check=True)

    def server(self, **env: str) -> GroupXServer:
        config = {
            "server": {"host": "127.0.0.1", "port": 4310},
            "timeouts": {"closeMs": 300},
            "agents": fake_agents(self.workdir, "kimi"),
        }
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


def head(server: GroupXServer) -> int:
    return server.get("/api/bootstrap").json()["room"]["throughSeq"]


def assert_refused_and_nothing_written(
    server: GroupXServer, command_id: str, refused, fault: str, head_before: int
) -> None:
    """503 STORE_UNAVAILABLE naming ``fault`` with Retry-After; no receipt, and no event past the head."""
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "STORE_UNAVAILABLE"
    assert fault in refused.json()["error"]["message"]
    assert refused.headers["Retry-After"].isdigit()
    assert db_rows(server, "SELECT 1 FROM rooms_clientcommand WHERE client_command_id = ?", command_id) == []
    assert head(server) == head_before


def assert_log_gap_free(server: GroupXServer) -> list[dict]:
    log = server.events()
    assert [e["seq"] for e in log] == list(range(1, len(log) + 1))
    return log


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
    head_before = head(server)
    command_id, refused = post_message(server, "while the disk is full")

    assert_refused_and_nothing_written(server, command_id, refused, "disk is full", head_before)
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
    log = assert_log_gap_free(server)
    assert not any("while the disk is full" in str(e["body"]) for e in log)
    # The same command, sent again now, is accepted: the refusal stored nothing under its id.
    body = {"clientCommandId": command_id, "to": ["agent:kimi"], "content": "while the disk is full"}
    assert server.post("/api/messages", body).status_code == 202


def test_a_lock_held_by_another_process_for_ten_seconds_answers_store_unavailable_and_turns_run_once_it_is_released(
    room,
):
    server = room.server().start()  # the default busy timeout (5 s): the lock outlasts it
    assert wait_terminal(server, send(server, "agent:kimi", "before")["turns"][0]["turnId"])["type"] == "turn.completed"
    running = send(server, "agent:kimi", "slow [[fake: sleep ms=3000; echo]]")["turns"][0]["turnId"]
    wait_until(lambda: turn_started(server, running), message="the slow Turn to start")

    locker = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(room.store_dir / "groupx.db"), str(LOCK_SECONDS)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert locker.stdout.readline().strip() == "locked"
        head_before = head(server)
        command_id, refused = post_message(server, "while another process holds the lock")

        assert_refused_and_nothing_written(server, command_id, refused, "locked by another process", head_before)
        degraded = health(server)
        assert degraded["status"] == "degraded" and degraded["store"]["fault"] == "locked"
        wait_until(lambda: prompts_answered(server) == 2, message="the CLI to answer the slow prompt")
        assert not is_terminal(server, running)
        # Its Turn is still running in the store, so the agent's binding may call tools: a write
        # tool gets the same code.
        tool = call_tool(
            server,
            active_binding(server, "agent:kimi"),
            "publish",
            {"content": "from an agent while locked", "clientCommandId": "p-locked"},
        ).json()
        assert tool["result"]["isError"] is True
        assert json.loads(tool["result"]["content"][0]["text"])["code"] == "STORE_UNAVAILABLE"
    finally:
        released = locker.communicate("release\n", timeout=LOCK_SECONDS + 30)[0]
    assert released.strip() == "released"

    assert db_rows(server, "SELECT 1 FROM rooms_clientcommand WHERE client_command_id = ?", command_id) == []
    after = send(server, "agent:kimi", "after the lock")["turns"][0]["turnId"]
    for turn_id in (running, after):
        assert wait_terminal(server, turn_id)["type"] == "turn.completed"
    wait_until(lambda: health(server)["status"] == "ok", message="health ok again")
    log = assert_log_gap_free(server)
    assert not any("while another process holds the lock" in str(e["body"]) for e in log)


def test_a_start_on_a_read_only_disk_keeps_retrying_and_becomes_ready_when_it_is_writable(room):
    room.mount_tmpfs()
    server = room.server()
    server.manage("migrate", "--noinput", "-v0")
    room.remount("ro")
    server.start(migrate=False, wait_ready=False)

    waiting = wait_until(
        lambda: (h := health(server)).get("startAttempts", 0) >= 2 and h, message="a second start attempt"
    )
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


def test_a_restart_after_a_sigkill_on_a_read_only_folder_writes_nothing_and_recovers_when_it_is_writable(room):
    room.mount_tmpfs()
    server = room.server().start()
    assert wait_terminal(server, send(server, "agent:kimi", "before")["turns"][0]["turnId"])["type"] == "turn.completed"
    running = send(server, "agent:kimi", "[[fake: hang]]")["turns"][0]["turnId"]
    wait_until(lambda: turn_started(server, running), message="the hanging Turn to start")
    history = server.events()

    server.kill()
    room.remount("ro")
    server.start(migrate=False, wait_ready=False)

    wait_until(lambda: health(server).get("store", {}).get("fault") == "read_only", message="the read-only fault")
    command_id, refused = post_message(server, "while the folder is read-only")
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "STORE_UNAVAILABLE"
    assert "read-only" in refused.json()["error"]["message"] and refused.headers["Retry-After"].isdigit()
    assert not is_terminal(server, running)  # restart recovery waits for the store like everything else

    room.remount("rw")

    wait_until(lambda: server.readiness() == "ready", timeout=30, message="the runtime to start by itself")
    terminal = wait_terminal(server, running)
    assert terminal["type"] == "turn.interrupted" and terminal["body"]["errorCode"] == "TURN_INTERRUPTED"
    log = assert_log_gap_free(server)
    assert log[: len(history)] == history  # what was there before the fault is untouched
    assert not any("while the folder is read-only" in str(e["body"]) for e in log)
    assert db_rows(server, "SELECT 1 FROM rooms_clientcommand WHERE client_command_id = ?", command_id) == []
    assert wait_terminal(server, send(server, "agent:kimi", "after")["turns"][0]["turnId"])["type"] == "turn.completed"
    assert len([p for p in prompts_sent(server, "kimi") if "[[fake: hang]]" in str(p)]) == 1  # never re-sent

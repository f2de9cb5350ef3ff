"""Bindings stay secret from other local processes and out of everything GroupX shows (D39).

A real server runs one fake CLI of each driver family (Codex App Server, ACP, Claude stream-json).
Every child process it starts is found by walking ``/proc/*/stat`` from the server's pid, and its
command line, world-readable on Linux, is read as any other local user could. The binding tokens
come from the database, read-only.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from tests.agents import db_rows, fake_agents, mcp_calls, send, tool_payload, wait_terminal
from tests.procs import descendants
from tests.server import wait_until
from tests.sse import SseClient

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

FAMILIES = ("codex", "claude", "kimi", "hermes", "grok")  # the App Server, stream-json and three ACP


def bindings(server) -> list[str]:
    return [
        row["binding_id"]
        for row in db_rows(server, "SELECT binding_id FROM agents_sessionbinding WHERE transport = 'structured'")
    ]


def claude_config_path(server) -> str | None:
    """The ``--mcp-config`` argument of the server's live Claude CLI, if one runs."""
    for argv in descendants(server.proc.pid).values():
        if "--mcp-config" in argv and any(arg.endswith("fake_claude.py") or arg.endswith("/claude") for arg in argv):
            return argv[argv.index("--mcp-config") + 1]
    return None


@pytest.fixture
def room(make_server, tmp_path):
    return make_server(fake_agents(tmp_path, *FAMILIES))


@pytest.fixture
def claude_room(make_server, tmp_path):
    return make_server(fake_agents(tmp_path, "claude"))


def run_turns_with_mcp_calls(room) -> list[dict]:
    accepted = send(room, [f"agent:{name}" for name in FAMILIES], "[[fake: mcp-publish text=hello]]")
    return [wait_terminal(room, turn["turnId"]) for turn in accepted["turns"]]


def test_no_child_of_the_server_carries_a_binding_on_its_command_line(room):
    terminals = run_turns_with_mcp_calls(room)
    assert [t["type"] for t in terminals] == ["turn.completed"] * len(FAMILIES)
    assert all(mcp_calls(room, name, "publish") for name in FAMILIES)  # each CLI reached /mcp with its binding

    children = descendants(room.proc.pid)
    tokens = bindings(room)

    assert len(tokens) >= len(FAMILIES)  # a start retried under load adds a closed one
    assert len(children) >= len(FAMILIES)
    leaked = {pid: argv for pid, argv in children.items() if any(token in " ".join(argv) for token in tokens)}
    assert leaked == {}


def test_claudes_mcp_config_is_a_private_file_that_lives_as_long_as_its_session(claude_room):
    room = claude_room
    first = send(room, "agent:claude", "[[fake: mcp-publish text=hi]]")["turns"][0]["turnId"]
    assert wait_terminal(room, first)["type"] == "turn.completed"
    path = Path(claude_config_path(room))
    live = db_rows(
        room, "SELECT binding_id FROM agents_sessionbinding WHERE actor_id = 'agent:claude' AND status = 'active'"
    )[0]["binding_id"]

    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert path.stat().st_uid == os.getuid()
    assert json.loads(path.read_text())["mcpServers"]["groupx"]["headers"]["X-GroupX-Binding"] == live

    crashed = send(room, "agent:claude", "[[fake: crash code=7]]")["turns"][0]["turnId"]
    assert wait_terminal(room, crashed)["type"] == "turn.failed"
    wait_until(lambda: not path.exists(), message="the crashed session's config file to be removed")
    after = send(room, "agent:claude", "back?")["turns"][0]["turnId"]
    assert wait_terminal(room, after)["type"] == "turn.completed"
    rebuilt = Path(claude_config_path(room))
    assert rebuilt != path and rebuilt.exists()

    room.stop()

    assert not rebuilt.exists()


def test_a_config_file_left_by_a_killed_server_is_removed_at_the_next_start(claude_room):
    room = claude_room
    turn = send(room, "agent:claude", "hi")["turns"][0]["turnId"]
    assert wait_terminal(room, turn)["type"] == "turn.completed"
    left = Path(claude_config_path(room))

    room.kill()  # SIGKILL: no close runs

    assert left.exists()
    room.start(migrate=False)
    assert not left.exists()


def test_bindings_never_reach_the_log_the_events_bootstrap_health_or_the_stream(room):
    with SseClient(room.base_url, after_seq=0) as stream:
        terminals = run_turns_with_mcp_calls(room)
        stream.wait_for(lambda e: e["eventId"] == max(terminals, key=lambda t: t["seq"])["eventId"])
        frames = json.dumps([*stream.durable, *stream.transient])
    published = [tool_payload(call) for name in FAMILIES for call in mcp_calls(room, name, "publish")]
    assert all("messageEventId" in body for body in published)  # the tools ran, under the bindings
    tokens = bindings(room)
    assert len(tokens) >= len(FAMILIES)  # a start retried under load adds a closed one
    seen = {
        "SSE frames": frames,
        "event rows": json.dumps(db_rows(room, "SELECT * FROM rooms_event"), default=str),
        "/api/bootstrap": room.get("/api/bootstrap").text,
        "/api/health": room.get("/api/health").text,
        "/api/events/page": room.get("/api/events/page").text,
        "/api/export.md": room.get("/api/export.md").text,
        "/api/setup": room.get("/api/setup").text,
    }
    room.stop()
    seen["the server's log"] = room.log()

    assert {where: token for where, text in seen.items() for token in tokens if token in text} == {}

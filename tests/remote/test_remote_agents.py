"""Agents on "another machine" through ssh (docs/DECISIONS.md D51): the same room
as a local agent, with the CLI's MCP calls carried back over an ``ssh -R`` forward, nothing bound
beyond loopback, and a dropped connection failing only the Turn it was running."""

from __future__ import annotations

import json

import pytest

from tests.agents import active_binding, cancel, prompts_sent, send, turn_events, wait_terminal, wire
from tests.remote.conftest import remote_agent
from tests.remote.sshd import ALIAS, DEAD_ALIAS
from tests.server import GroupXServer, wait_until

TERMINALS = ("turn.completed", "turn.failed", "turn.cancelled", "turn.interrupted")
TERMINAL_WAIT = 90  # deadlines, not sleeps: ssh start-ups are slow on a loaded 2-core machine


def started_records(room, flavor: str) -> list[dict]:
    return wire(room, flavor, kind="start")


def test_at_all_reaches_the_local_and_the_remote_agents_and_each_remote_cli_runs_in_its_remote_cwd(mixed_room):
    accepted = send(mixed_room, "@all", "hello everyone")
    terminals = {t["target"]: wait_terminal(mixed_room, t["turnId"], timeout=TERMINAL_WAIT) for t in accepted["turns"]}

    assert {actor: t["type"] for actor, t in terminals.items()} == dict.fromkeys(
        ["agent:codex", "agent:claude", "agent:kimi", "agent:coder"], "turn.completed"
    )
    agents = {a["agentId"]: a for a in mixed_room.get("/api/health").json()["agents"]}
    assert [agents[name]["host"] for name in ("claude", "kimi", "coder")] == [ALIAS] * 3
    assert agents["codex"]["host"] == "local"
    for flavor, name in (("claude", "claude"), ("kimi", "kimi"), ("codex", "coder")):
        cwds = {start["cwd"] for start in started_records(mixed_room, flavor)}
        assert str(mixed_room.workdir / f"remote-{name}") in cwds
    mcp_urls = {
        frame["params"]["config"]["mcp_servers.groupx"]["url"]
        for frame in prompts_sent(mixed_room, "codex", "thread/start")
    }
    room_url = f"http://127.0.0.1:{mixed_room.port}/mcp"
    assert room_url in mcp_urls and len(mcp_urls - {room_url}) == 1  # the remote Codex got the forward


def test_the_remote_claude_reads_its_mcp_config_from_a_private_remote_file_and_no_binding_is_on_a_command_line(
    mixed_room,
):
    accepted = send(mixed_room, "agent:claude", "check your files")
    assert wait_terminal(mixed_room, accepted["turns"][0]["turnId"], timeout=TERMINAL_WAIT)["type"] == "turn.completed"
    binding = active_binding(mixed_room, "agent:claude")
    argv = started_records(mixed_room, "claude")[-1]["argv"]
    config_path = argv[argv.index("--mcp-config") + 1]

    assert binding not in json.dumps(argv)
    assert "/groupx-" not in config_path  # not the room's local secret file: one made on the remote side
    assert mixed_room.log().count(binding) == 0


def test_a_remote_agent_asks_the_local_one_over_the_forwarded_mcp_port(mixed_room):
    accepted = send(mixed_room, "agent:kimi", "[[fake: mcp-ask to=agent:codex text=are-you-there?]]")
    terminal = wait_terminal(mixed_room, accepted["turns"][0]["turnId"], timeout=TERMINAL_WAIT)

    assert terminal["type"] == "turn.completed"
    mcp = [r for r in wire(mixed_room, "kimi", kind="mcp") if (r.get("req") or {}).get("method") == "tools/call"]
    assert mcp and mcp[-1]["status"] == 200
    assert not mcp[-1]["url"].endswith(f":{mixed_room.port}/mcp")  # the forwarded port, not the room's own
    answers = [
        e for e in mixed_room.events() if e["type"] == "message.created" and e["actor"]["actorId"] == "agent:codex"
    ]
    assert any(e["body"]["content"] == "echo: are-you-there?" for e in answers)


def test_a_dropped_ssh_connection_fails_only_the_running_turn_and_the_next_turn_reconnects(mixed_room, sshd):
    running = send(mixed_room, "agent:claude", "[[fake: hang]]")["turns"][0]["turnId"]
    bystander = send(mixed_room, "agent:codex", "[[fake: hang]]")["turns"][0]["turnId"]
    for turn_id in (running, bystander):
        wait_until(
            lambda t=turn_id: any(e["type"] == "turn.started" for e in turn_events(mixed_room, t)),
            timeout=TERMINAL_WAIT,
            message=f"{turn_id} running",
        )
    launches_before = len(started_records(mixed_room, "claude"))

    assert sshd.drop_connections()  # the kimi and claude connections, as a network failure would
    terminal = wait_terminal(mixed_room, running, timeout=TERMINAL_WAIT)

    assert terminal["type"] == "turn.failed"
    assert terminal["body"]["errorCode"] == "PROTOCOL_INVALID_MESSAGE"  # the CLI's wire ended mid-Turn
    assert not any(e["type"] in TERMINALS for e in turn_events(mixed_room, bystander))  # the local Turn runs on
    after = send(mixed_room, "agent:claude", "are you back?")["turns"][0]["turnId"]
    assert wait_terminal(mixed_room, after, timeout=TERMINAL_WAIT)["type"] == "turn.completed"
    relaunch = started_records(mixed_room, "claude")[launches_before:]
    assert relaunch and "--resume" in relaunch[0]["argv"]  # a new connection, the same native session
    assert [e["type"] for e in turn_events(mixed_room, running) if e["type"] in TERMINALS] == ["turn.failed"]
    cancel(mixed_room, bystander)
    assert wait_terminal(mixed_room, bystander, timeout=TERMINAL_WAIT)["type"] == "turn.cancelled"


def test_a_remote_turn_is_cancelled_natively_through_the_connection(mixed_room):
    running = send(mixed_room, "agent:kimi", "[[fake: hang]]")["turns"][0]["turnId"]
    wait_until(
        lambda: any(e["type"] == "turn.started" for e in turn_events(mixed_room, running)),
        timeout=TERMINAL_WAIT,
        message="kimi's Turn running",
    )

    cancel(mixed_room, running)

    assert wait_terminal(mixed_room, running, timeout=TERMINAL_WAIT)["type"] == "turn.cancelled"
    assert any(r["msg"].get("method") == "session/cancel" for r in wire(mixed_room, "kimi", kind="in"))


@pytest.fixture
def room_with_a_dead_destination(tmp_path, sshd):
    agents = {
        "lost": {**remote_agent("kimi", tmp_path, "lost"), "ssh": DEAD_ALIAS},
        "kimi": remote_agent("kimi", tmp_path, "kimi"),
    }
    room = GroupXServer(
        tmp_path,
        {"agents": agents, "timeouts": {"handshakeMs": 60000, "closeMs": 300}},
        env={"GROUPX_SSH_CONFIG": str(sshd.ssh_config)},
    )
    yield room.start()
    room.stop()


def test_an_unreachable_destination_fails_the_start_with_ssh_s_reason_and_only_that_agents_turn(
    room_with_a_dead_destination,
):
    room = room_with_a_dead_destination
    turns = {t["target"]: t["turnId"] for t in send(room, "@all", "anyone there?")["turns"]}

    assert wait_terminal(room, turns["agent:kimi"], timeout=TERMINAL_WAIT)["type"] == "turn.completed"
    failed = wait_terminal(room, turns["agent:lost"], timeout=TERMINAL_WAIT)
    assert failed["type"] == "turn.failed" and failed["body"]["errorCode"] == "ADAPTER_START_FAILED"
    lost = next(a for a in room.get("/api/health").json()["agents"] if a["agentId"] == "lost")
    assert lost["host"] == DEAD_ALIAS and "Connection refused" in lost["lastError"]["message"]

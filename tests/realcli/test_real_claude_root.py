"""Claude Code as root: without IS_SANDBOX=1 it refuses bypassPermissions (NATIVE_PROTOCOLS §4.9, L1).

GroupX never sets IS_SANDBOX itself. When it is missing, the user must see why the agent cannot
start: a ``session.failed`` event and health ``lastError`` with ``NATIVE_POLICY_BLOCKED`` and a
hint that names IS_SANDBOX=1, and a Turn to that agent fails with the same code.
"""

from __future__ import annotations

import os

import pytest

from tests.agents import send, wait_terminal
from tests.realcli import harness
from tests.server import GroupXServer, wait_until


@pytest.mark.skipif(os.geteuid() != 0, reason="Claude Code only refuses bypassPermissions when run as root")
def test_claude_as_root_without_is_sandbox_is_policy_blocked_with_a_hint(tmp_path, mock, real_clis):
    agent = harness.make_agent(tmp_path, "claude", "claude", mock, sandbox=False)
    server = GroupXServer(tmp_path / "groupx", harness.room_config([agent]))
    server.env.pop("IS_SANDBOX", None)  # nothing in the server's own environment either
    server.start(timeout=60)
    try:

        def blocked():
            entry = harness.health_agents(server).get("agent:claude", {})
            return entry if entry.get("status") in ("native_policy_blocked", "failed", "ready") else None

        health = wait_until(blocked, timeout=60, interval=0.25, message="claude's start to settle")
        assert health["status"] == "native_policy_blocked", health
        assert health["lastError"]["code"] == "NATIVE_POLICY_BLOCKED"
        assert "IS_SANDBOX=1" in health["lastError"]["message"]
        failed = [e for e in server.events() if e["type"] == "session.failed"]
        assert len(failed) == 1 and failed[0]["actor"]["actorId"] == "agent:claude"
        assert failed[0]["body"]["errorCode"] == "NATIVE_POLICY_BLOCKED"
        assert "IS_SANDBOX=1" in failed[0]["body"]["message"]
        assert failed[0]["body"]["attempts"] == 1  # a policy refusal is not retried
        # GroupX launched the CLI without IS_SANDBOX: the wrapper saw none
        assert agent.inherited() and set(agent.inherited()) == {"IS_SANDBOX=<unset>"}

        turn_id = send(server, "agent:claude", "hello?")["turns"][0]["turnId"]
        terminal = wait_terminal(server, turn_id, timeout=60)
        assert terminal["type"] == "turn.failed" and terminal["body"]["errorCode"] == "NATIVE_POLICY_BLOCKED"
    finally:
        server.stop()

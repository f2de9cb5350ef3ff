"""A real Claude Code brain runs the room assistant and calls an operator tool (D47, D48).

The assistant's brain is the real CLI behind the project's mock model; the room's agent is the
fake kimi (this test is about the brain, not the worker). The model makes the brain call
``worker_ask`` on ``/mcp/operator`` through Claude Code's own MCP client (the per-session token in
its ``--mcp-config`` file); the worker's answer comes back to the model as the tool result, and
the brain's reply to the side chat quotes it.
"""

from __future__ import annotations

from tests.agents import fake_agents
from tests.realcli import harness
from tests.server import GroupXServer, wait_until


def test_a_real_claude_brain_dispatches_with_worker_ask_and_quotes_the_answer(tmp_path, mock, key):
    brain = harness.make_agent(tmp_path, "assistant-brain", "claude", mock)
    config = {
        "server": {"host": "127.0.0.1", "port": 4310},
        "agents": fake_agents(tmp_path, "kimi"),
        "timeouts": {"handshakeMs": 60_000, "closeMs": 3_000},
        "assistant": {
            "enabled": True,
            "brain": {"driver": "claude", "command": str(brain.wrapper), "cwd": str(brain.cwd)},
        },
    }
    server = GroupXServer(tmp_path / "groupx", config).start(timeout=60)
    try:
        wait_until(
            lambda: server.get("/api/assistant").json()["status"] == "ready",
            timeout=120,
            message="the real brain ready",
        )
        mock.script(
            {
                "when": key,
                "steps": [
                    {
                        "tool": "worker_ask",
                        "args": {
                            "to": ["agent:kimi"],
                            "content": f"status please {key}",
                            "clientCommandId": f"ask-{key}",
                            "timeoutMs": 60000,
                        },
                    },
                    {"text": "kimi said: {result}"},
                ],
            }
        )

        answer = server.post(
            "/api/assistant/messages",
            {"clientCommandId": f"side-{key}", "content": f"Ask kimi for a status {key}"},
            timeout=180,
        )

        assert answer.status_code == 200, answer.text
        reply = answer.json()["assistantMessage"]
        assert reply["role"] == "assistant" and "outcome" not in reply, reply
        assert reply["content"].startswith("kimi said: ") and f"echo: status please {key}" in reply["content"]
        dispatch = next(e for e in server.events() if e["type"] == "operator.dispatch")
        assert dispatch["actor"]["actorId"] == "user:assistant" and dispatch["to"] == ["agent:kimi"]
        steps = [r["step"] for r in mock.requests(rule=key)]
        assert steps == [0, 1], steps
        # the model got the fixed product prompt with the message
        first = mock.requests(rule=key)[0]
        assert "[groupx_room_assistant]" in str(first["body"])
        harness.record("assistant worker_ask", "claude")
    finally:
        server.stop()

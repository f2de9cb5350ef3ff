"""Kimi: what the only Kimi CLI that runs offline does under GroupX's kimi driver (optional).

GroupX's kimi driver targets the npm Kimi Code CLI 2.x (NATIVE_PROTOCOLS §3.1), which needs a
Moonshot login and Node >= 22.19, so it cannot be driven offline here. The archived Python
kimi-cli 1.51 can (with a fake token file), and the installer fetches it when a Python >= 3.12
exists. This test pins how far it gets: initialize (HTTP MCP advertised) and session/new (with
the GroupX MCP server) succeed, then ``session/set_mode {modeId: "auto"}`` is refused, because
1.51 has only a ``default`` mode. The start then fails visibly, which is the behaviour the
conformance doc records. If a future kimi-cli passes, this test fails and the doc must change.
"""

from __future__ import annotations

import pytest

from tests.realcli import harness, install
from tests.server import GroupXServer, wait_until


@pytest.fixture
def kimi_installed():
    if not install.kimi_ok(install.cache_dir()):
        pytest.skip("kimi-cli 1.51 is optional and not installed (it needs Python >= 3.12)")


def test_legacy_kimi_cli_starts_but_refuses_the_kimi_drivers_auto_mode(tmp_path, mock, kimi_installed):
    agent = harness.make_agent(tmp_path, "kimi", "kimi", mock)
    server = GroupXServer(tmp_path / "groupx", harness.room_config([agent])).start(timeout=60)
    try:

        def settled():
            entry = harness.health_agents(server).get("agent:kimi", {})
            return entry if entry.get("status") in ("failed", "ready", "native_policy_blocked") else None

        health = wait_until(settled, timeout=150, interval=0.5, message="kimi's start to settle")
        assert health["status"] == "failed", health
        assert health["lastError"]["code"] == "ADAPTER_START_FAILED"
        assert "session/set_mode" in health["lastError"]["message"]
        wire = agent.launches()[0]
        sent = [r["msg"] for r in wire if r["dir"] == "->" and "method" in r.get("msg", {})]
        assert [m["method"] for m in sent][:3] == ["initialize", "session/new", "session/set_mode"]
        assert sent[2]["params"]["modeId"] == "auto"
        answers = {r["msg"]["id"]: r["msg"] for r in wire if r["dir"] == "<-" and "id" in r.get("msg", {})}
        init = answers[sent[0]["id"]]["result"]
        assert init["agentCapabilities"]["mcpCapabilities"]["http"] is True
        modes = answers[sent[1]["id"]]["result"]["modes"]["availableModes"]
        assert [m["id"] for m in modes] == ["default"]
        assert "error" in answers[sent[2]["id"]]
    finally:
        server.stop()

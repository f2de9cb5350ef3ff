"""``POST /api/setup/test-cli`` through a real server and the bundled fake CLIs: a CLI's
``--version`` and its native handshake, bounded, with no process left behind, and only ever a
command the config or PATH names (never one from the request)."""

from __future__ import annotations

import json
import os

import pytest

from tests.procs import descendants
from tests.server import FAKES_BIN, GroupXServer, fake_agent, hanging_agent, wait_until


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("testcli")
    path_dir = workdir / "path"
    path_dir.mkdir()
    (path_dir / "codex").symlink_to(FAKES_BIN / "codex")  # the only native CLI "installed" here
    # Disabled: the runtime starts no session of theirs, so every fake CLI alive is the test's.
    refusing = fake_agent("kimi", workdir, suffix="refusing", enabled=False)
    (workdir / "cwd-kimi-refusing" / ".groupx-fake.json").write_text(
        json.dumps({"session_new_error": {"code": -32000, "message": "Authentication required"}})
    )
    agents = {"sleeper": hanging_agent(workdir), "kimi": fake_agent("kimi", workdir, enabled=False), "locked": refusing}
    server = GroupXServer(
        workdir,
        {"agents": agents, "timeouts": {"handshakeMs": 5000, "closeMs": 300}},
        env={"PATH": f"{path_dir}{os.pathsep}/usr/bin{os.pathsep}/bin"},
    )
    server.start()
    yield server
    server.stop()


def fake_children(server: GroupXServer) -> list[list[str]]:
    return [
        argv for argv in descendants(server.proc.pid).values() if any(str(FAKES_BIN) in a or "fake_" in a for a in argv)
    ]


def test_a_configured_agent_passes_its_version_probe_and_handshake_and_leaves_no_process(server):
    answer = server.post("/api/setup/test-cli", {"agentId": "kimi"})
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert result["found"] is True and result["driver"] == "kimi"
    assert result["version"]
    assert result["handshake"] == {"ok": True}
    wait_until(lambda: not fake_children(server), message="the tested CLI closed")


def test_a_refused_handshake_answers_its_error_code_and_leaves_no_process(server):
    result = server.post("/api/setup/test-cli", {"agentId": "locked"}).json()
    assert result["found"] is True
    assert result["handshake"]["ok"] is False
    assert result["handshake"]["code"] and result["handshake"]["code"].isupper()
    assert result["handshake"]["message"]
    wait_until(lambda: not fake_children(server), message="the refused CLI closed")


def test_a_driver_found_on_path_is_tested_and_one_that_is_not_gets_an_install_hint(server):
    found = server.post("/api/setup/test-cli", {"driver": "codex"}).json()
    assert found["found"] is True and found["handshake"] == {"ok": True}
    missing = server.post("/api/setup/test-cli", {"driver": "claude"}).json()
    assert missing["found"] is False
    assert missing["handshake"]["code"] == "ADAPTER_NOT_FOUND"
    assert "@anthropic-ai/claude-code" in missing["installHint"]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"driver": "kimi", "agentId": "kimi"},
        {"driver": "/bin/sh"},
        {"driver": "kimi", "command": "/bin/sh"},
        {"agentId": 3},
        [],
        {"agentId": ""},
    ],
)
def test_a_body_that_does_not_name_one_known_cli_is_refused_with_a_code(server, body):
    answer = server.post("/api/setup/test-cli", body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == "INVALID_ENVELOPE"


def test_an_agent_that_is_not_in_the_config_is_not_found(server):
    answer = server.post("/api/setup/test-cli", {"agentId": "nobody"})
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "UNKNOWN_ACTOR"

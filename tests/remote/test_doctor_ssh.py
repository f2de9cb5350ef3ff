"""``groupx doctor`` checks each SSH destination (docs/DECISIONS.md D51): reachable, the CLI found
there, its version; a dead destination is reported, never waited on."""

from __future__ import annotations

import json

from tests.groupx_cli import cli_env, groupx
from tests.remote.conftest import remote_agent
from tests.remote.sshd import ALIAS, DEAD_ALIAS


def test_doctor_reports_each_ssh_destination_and_fails_for_a_dead_one_or_a_missing_cli(tmp_path, sshd):
    agents = {
        "kimi": remote_agent("kimi", tmp_path, "kimi"),
        "lost": {**remote_agent("kimi", tmp_path, "lost"), "ssh": DEAD_ALIAS},
        "ghost": {**remote_agent("kimi", tmp_path, "ghost"), "command": "no-such-cli-anywhere"},
    }
    config = tmp_path / "groupx.json"
    config.write_text(json.dumps({"agents": agents}))
    env = cli_env(tmp_path, GROUPX_SSH_CONFIG=str(sshd.ssh_config))

    result = groupx("doctor", "--config", str(config), workdir=tmp_path, env=env, timeout=120)

    assert f"agent:kimi on {ALIAS}: reachable, CLI found" in result.stdout, result.stdout
    assert f"agent:lost on {DEAD_ALIAS}: UNREACHABLE" in result.stdout
    assert f"agent:ghost on {ALIAS}: reachable, CLI NOT FOUND" in result.stdout
    assert "an SSH destination or its CLI does not answer" in result.stdout
    assert result.returncode == 1, result.stdout

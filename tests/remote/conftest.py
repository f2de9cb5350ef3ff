"""The remote-agent tier (``make test-remote``, docs/DECISIONS.md D52): a room whose agents run
partly "on another machine", through a throwaway sshd on loopback (``tests/remote/sshd.py``).

``make test`` leaves this folder out (it needs sshd and is a tier of its own); ``make test-remote``
sets ``GROUPX_REMOTE_TIER=1``.
"""

from __future__ import annotations

import os

import pytest

from tests.remote.sshd import ALIAS, Sshd, sshd_binary
from tests.server import FAKES_BIN, GroupXServer

if os.environ.get("GROUPX_REMOTE_TIER") != "1":
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    if sshd_binary() is None:
        pytest.skip("openssh-server is not installed (make test-remote installs it as root)")
    server = Sshd(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()


def remote_agent(driver: str, workdir, name: str) -> dict:
    """An agent on the ssh alias; its cwd is an absolute path "on the remote machine"."""
    cwd = workdir / f"remote-{name}"
    cwd.mkdir(parents=True, exist_ok=True)
    return {"driver": driver, "command": str(FAKES_BIN / driver), "cwd": str(cwd), "ssh": ALIAS}


@pytest.fixture(scope="module")
def mixed_room(tmp_path_factory, sshd):
    """One local agent (codex) and three remote ones, one per wire: claude (its MCP config file
    travels through ssh's stdin), kimi (ACP) and coder (Codex, its MCP server a thread config)."""
    workdir = tmp_path_factory.mktemp("mixed")
    local_cwd = workdir / "local-codex"
    local_cwd.mkdir()
    agents = {
        "codex": {"driver": "codex", "command": str(FAKES_BIN / "codex"), "cwd": str(local_cwd)},
        "claude": remote_agent("claude", workdir, "claude"),
        "kimi": remote_agent("kimi", workdir, "kimi"),
        "coder": remote_agent("codex", workdir, "coder"),
    }
    server = GroupXServer(
        workdir,
        {"agents": agents, "timeouts": {"handshakeMs": 60000, "closeMs": 300}},
        env={"GROUPX_SSH_CONFIG": str(sshd.ssh_config)},
    )
    server.start()
    yield server
    server.stop()

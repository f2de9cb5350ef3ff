"""The ssh argv a remote agent is launched with (docs/DECISIONS.md D51); the tier that runs it
through a real sshd is tests/remote (``make test-remote``)."""

from __future__ import annotations

import subprocess

import pytest

from agents.drivers import remote

TARGET = remote.SshTarget(destination="me@box", local_port=4310, remote_port=23456, config_file="/etc/gx/ssh_config")


def test_the_ssh_argv_is_batch_mode_without_a_tty_and_forwards_the_remote_loopback_to_the_rooms_port():
    argv = remote.wrap(["kimi", "acp"], "/srv/repo", TARGET)

    assert argv[:3] == ["ssh", "-F", "/etc/gx/ssh_config"]
    assert "-T" in argv and "BatchMode=yes" in argv and "ExitOnForwardFailure=yes" in argv
    assert argv[argv.index("-R") + 1] == "127.0.0.1:23456:127.0.0.1:4310"
    assert argv[-3:-1] == ["--", "me@box"]
    assert TARGET.mcp_origin == "http://127.0.0.1:23456"


def test_the_remote_script_runs_the_argv_in_the_remote_cwd_whatever_the_characters():
    script = remote.remote_script(["printf", "%s|", "it's", "$HOME"], "/tmp")

    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=10, check=True)

    assert done.stdout == "it's|$HOME|"


def test_a_secret_reaches_a_private_file_through_stdin_and_never_the_command_line(tmp_path):
    secret = '{"headers":{"X-GroupX-Binding":"b-secret"}}'
    script = remote.remote_script(
        ["sh", "-c", 'stat -c %a "$0"; cat "$0"; cat', "/local/claude-mcp.json"],
        str(tmp_path),
        [("/local/claude-mcp.json", "claude-mcp.json")],
    )

    done = subprocess.run(
        ["sh", "-c", script],
        input=remote.preamble([secret]).decode() + "then the frames\n",
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )

    assert "b-secret" not in script
    assert done.stdout.splitlines() == ["600", secret, "then the frames"]


def test_a_secret_with_a_newline_is_refused_and_an_option_is_never_a_destination():
    with pytest.raises(ValueError, match="one line"):
        remote.preamble(["two\nlines"])
    with pytest.raises(ValueError, match="not an ssh destination"):
        remote.wrap(["kimi"], "/", remote.SshTarget("-oProxyCommand=x", 1, 2))

"""``groupx stop`` and ``groupx restart-agent`` find the running room through the run file it keeps
beside its config, so a ``groupx.json`` broken while the room runs does not strand it
(docs/DECISIONS.md D102)."""

from __future__ import annotations

import json

import pytest

from tests.groupx_cli import Foreground, groupx, health, port_refuses, write_config
from tests.server import free_port, wait_until


@pytest.fixture
def foreground():
    started: list[Foreground] = []

    def start(workdir, *args) -> Foreground:
        started.append(Foreground(workdir, *args))
        return started[-1]

    yield start
    for process in started:
        process.terminate()


def test_a_running_room_keeps_a_run_file_beside_its_config_and_removes_it_when_it_stops(tmp_path, foreground):
    port = free_port()
    config = write_config(tmp_path, port)
    running = foreground(tmp_path, "start", "--config", str(config), "--no-open")
    running.wait_ready(port)

    run_file = json.loads((tmp_path / ".groupx.json.run").read_text())

    assert run_file["port"] == port and run_file["pid"] == running.proc.pid
    assert run_file["configPath"] == str(config)
    assert groupx("stop", "--config", str(config), workdir=tmp_path).returncode == 0
    assert running.wait_exit() == 0
    assert not (tmp_path / ".groupx.json.run").exists()


def test_with_a_malformed_config_restart_agent_and_stop_still_reach_the_running_room(tmp_path, foreground):
    port = free_port()
    config = write_config(tmp_path, port)
    running = foreground(tmp_path, "start", "--config", str(config), "--no-open")
    running.wait_ready(port)

    def kimi():
        return next((a for a in (health(port) or {}).get("agents", []) if a["actorId"] == "agent:kimi"), {})

    wait_until(lambda: kimi().get("status") == "ready", timeout=30, message="kimi ready")
    config.write_text('{"server": {"port": ')  # broken while the room runs

    restarted = groupx("restart-agent", "kimi", "--config", str(config), workdir=tmp_path)
    stopped = groupx("stop", "--config", str(config), workdir=tmp_path)

    assert restarted.returncode == 0, restarted.stderr
    assert restarted.stdout.startswith("Restarting agent:kimi")
    assert stopped.returncode == 0, stopped.stderr
    assert running.wait_exit() == 0
    assert port_refuses(port)


def test_a_run_file_left_by_a_killed_room_is_not_mistaken_for_a_running_one(tmp_path, foreground):
    port = free_port()
    config = write_config(tmp_path, port)
    running = foreground(tmp_path, "start", "--config", str(config), "--no-open")
    running.wait_ready(port)
    running.proc.kill()
    running.proc.wait()
    assert (tmp_path / ".groupx.json.run").exists()  # SIGKILL leaves it behind

    stopped = groupx("stop", "--config", str(config), workdir=tmp_path)

    assert stopped.returncode == 1 and "no GroupX instance detected" in stopped.stderr

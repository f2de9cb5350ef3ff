"""The ``groupx`` command (FEATURES §2.2) and ``POST /api/runtime/shutdown`` (PROTOCOL §10.8).

Every instance is a real process started the way a user starts it; tests look at exit codes,
output, the port and ``/api/health``, never at internals.
"""

from __future__ import annotations

import json
import os
import socket
import threading

import httpx
import pytest

from tests.groupx_cli import (
    Foreground,
    cli_env,
    fake,
    groupx,
    health,
    isolated_path,
    port_refuses,
    write_config,
)
from tests.server import FAKES_BIN, GroupXServer, free_port, hanging_agent, wait_until
from tests.sse import SseClient


@pytest.fixture
def foreground():
    """Start ``groupx`` commands in the foreground; whatever still runs at the end is stopped."""
    started: list[Foreground] = []

    def start(workdir, *args, env=None) -> Foreground:
        process = Foreground(workdir, *args, env=env)
        started.append(process)
        return process

    yield start
    for process in started:
        process.terminate()


class ForeignListener:
    """A plain TCP server that answers every connection with a non-GroupX HTTP response."""

    def __init__(self, port: int):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(16)
        self.connections = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello")

    def answers(self) -> bool:
        return httpx.get(f"http://127.0.0.1:{self.sock.getsockname()[1]}/", timeout=2).text == "hello"

    def close(self) -> None:
        self.sock.close()


# --- start --------------------------------------------------------------------------------------


def test_a_second_start_reuses_the_running_instance(tmp_path, foreground):
    port = free_port()
    config = write_config(tmp_path, port)
    first = foreground(tmp_path, "start", "--config", str(config), "--no-open")
    before = first.wait_ready(port)

    second = groupx("start", "--config", str(config), "--no-open", workdir=tmp_path)

    assert second.returncode == 0, second.stderr
    assert "already running" in second.stdout
    assert first.running()
    assert health(port)["runtimeKey"] == before["runtimeKey"]


def test_start_is_the_default_command_and_reads_groupx_config(tmp_path, foreground):
    port = free_port()
    config = write_config(tmp_path, port)
    first = foreground(tmp_path, "--no-open", env=cli_env(tmp_path, GROUPX_CONFIG=str(config)))
    first.wait_ready(port)

    again = groupx("--config", str(config), "--no-open", workdir=tmp_path)

    assert again.returncode == 0 and "already running" in again.stdout


def test_a_foreign_listener_is_a_conflict_and_is_left_alone(tmp_path):
    port = free_port()
    config = write_config(tmp_path, port)
    listener = ForeignListener(port)
    try:
        result = groupx("start", "--config", str(config), "--no-open", workdir=tmp_path)

        assert result.returncode != 0
        assert "in use by another program" in result.stderr
        assert listener.answers()
        assert not (tmp_path / ".groupx" / "groupx.db").exists()  # the loser opened no store
    finally:
        listener.close()


def test_another_configs_instance_on_the_port_is_a_conflict(tmp_path, foreground):
    port = free_port()
    mine = write_config(tmp_path / "mine", port)
    theirs = write_config(tmp_path / "theirs", port)
    running = foreground(tmp_path / "theirs", "start", "--config", str(theirs), "--no-open")
    key = running.wait_ready(port)["runtimeKey"]

    result = groupx("start", "--config", str(mine), "--no-open", workdir=tmp_path)

    assert result.returncode != 0
    assert "another GroupX instance" in result.stderr
    assert running.running() and health(port)["runtimeKey"] == key


def test_two_racing_starts_end_with_one_runtime_and_one_reuse(tmp_path, foreground):
    port = free_port()
    config = write_config(tmp_path, port)
    racers = [foreground(tmp_path, "start", "--config", str(config), "--no-open") for _ in range(2)]

    wait_until(lambda: any(not r.running() for r in racers), timeout=60, message="one racer to finish")
    loser = next(r for r in racers if not r.running())
    winner = next(r for r in racers if r is not loser)

    assert loser.proc.returncode == 0, loser.output()
    assert "already running" in loser.output()
    winner.wait_ready(port)
    assert winner.running()


def lost_bind(monkeypatch, tmp_path, probes: list[str]):
    """``start`` whose listen fails with EADDRINUSE after an "unreachable" probe: the window in which
    a concurrent start binds first. ``probes`` are what the re-probes then find."""
    from groupx_site import cli, port_probe, serve
    from setup_wizard.config import load_config

    path = write_config(tmp_path, free_port())
    target = port_probe.Target(path, load_config(path))
    same = {
        "service": "groupx",
        "protocol": "groupx.runtime/1",
        "runtimeKey": target.key,
        "runtimeScopeKey": target.scope_key,
        "status": "ok",
    }
    found = [port_probe.Probe("unreachable")] + [
        port_probe.Probe(kind, 200, same if kind == "groupx" else {}) for kind in probes
    ]
    monkeypatch.setattr(port_probe, "probe", lambda host, port, timeout=0.5: found.pop(0))
    monkeypatch.setattr(serve, "serve", lambda config, **hooks: serve.ServeResult("address_in_use", "in use"))
    monkeypatch.setattr(cli.time, "sleep", lambda seconds: None)
    return cli.start_race(target, open_browser=False), found


def test_a_lost_bind_to_the_same_config_is_a_reuse(monkeypatch, tmp_path, capsys):
    code, left = lost_bind(monkeypatch, tmp_path, ["silent", "groupx"])

    assert code == 0 and left == []
    assert "already running" in capsys.readouterr().out


def test_a_lost_bind_to_anything_else_is_a_conflict_after_three_probes(monkeypatch, tmp_path, capsys):
    code, left = lost_bind(monkeypatch, tmp_path, ["foreign", "foreign", "foreign", "groupx"])

    assert code == 1 and len(left) == 1  # three re-probes, no more
    assert "in use by another program" in capsys.readouterr().err


# --- stop / restart -----------------------------------------------------------------------------


def test_stop_frees_the_port_and_starts_nothing(tmp_path, foreground):
    port = free_port()
    config = write_config(tmp_path, port)
    running = foreground(tmp_path, "start", "--config", str(config), "--no-open")
    running.wait_ready(port)

    result = groupx("stop", "--config", str(config), workdir=tmp_path)

    assert result.returncode == 0, result.stderr
    assert "stopped" in result.stdout
    assert running.wait_exit() == 0
    assert port_refuses(port)


def test_stop_ends_open_event_streams(tmp_path, foreground):
    port = free_port()
    config = write_config(tmp_path, port)
    running = foreground(tmp_path, "start", "--config", str(config), "--no-open")
    running.wait_ready(port)
    with SseClient(f"http://127.0.0.1:{port}", after_seq=0) as stream:
        wait_until(lambda: stream.status == 200, message="the stream to open")

        assert groupx("stop", "--config", str(config), workdir=tmp_path).returncode == 0

        assert stream.closed.wait(10)
    assert running.wait_exit() == 0


def test_stop_with_nothing_running_says_no_instance_was_detected(tmp_path):
    config = write_config(tmp_path, free_port())

    result = groupx("stop", "--config", str(config), workdir=tmp_path)

    assert result.returncode != 0
    assert "no GroupX instance detected" in result.stderr and "port" in result.stderr


def test_stop_refuses_an_instance_of_another_config_path(tmp_path, foreground):
    port = free_port()
    theirs = write_config(tmp_path / "theirs", port)
    mine = write_config(tmp_path / "mine", port)
    running = foreground(tmp_path / "theirs", "start", "--config", str(theirs), "--no-open")
    running.wait_ready(port)

    result = groupx("stop", "--config", str(mine), workdir=tmp_path)

    assert result.returncode != 0
    assert "another groupx.json" in result.stderr
    assert running.running() and health(port)["readiness"] == "ready"


def test_stop_still_recognises_its_instance_after_the_roster_changed(tmp_path, foreground):
    port = free_port()
    config = write_config(tmp_path, port)
    running = foreground(tmp_path, "start", "--config", str(config), "--no-open")
    running.wait_ready(port)
    write_config(tmp_path, port, {"kimi": fake(tmp_path, "kimi"), "hermes": fake(tmp_path, "hermes")})

    result = groupx("stop", "--config", str(config), workdir=tmp_path)

    assert result.returncode == 0, result.stderr
    assert running.wait_exit() == 0


def test_restart_applies_a_changed_roster(tmp_path, foreground):
    port = free_port()
    config = write_config(tmp_path, port)
    old = foreground(tmp_path, "start", "--config", str(config), "--no-open")
    old.wait_ready(port)
    write_config(tmp_path, port, {"kimi": fake(tmp_path, "kimi"), "hermes": fake(tmp_path, "hermes")})

    new = foreground(tmp_path, "restart", "--config", str(config), "--no-open")

    assert old.wait_exit(timeout=60) == 0, old.output()

    def both_agents_ready():
        assert new.running(), new.output()
        found = health(port)
        agents = {a["actorId"]: a["status"] for a in (found or {}).get("agents", [])}
        return agents == {"agent:kimi": "ready", "agent:hermes": "ready"}

    wait_until(both_agents_ready, timeout=60, interval=0.1, message="kimi and hermes ready after the restart")
    assert "The room now runs in this terminal" in new.output()  # the old terminal's room ended


def test_restart_agent_replaces_one_agents_cli_in_the_running_instance(tmp_path, foreground):
    port = free_port()
    config = write_config(tmp_path, port)
    foreground(tmp_path, "start", "--config", str(config), "--no-open").wait_ready(port)

    def kimi():
        return next((a for a in (health(port) or {}).get("agents", []) if a["actorId"] == "agent:kimi"), {})

    before = wait_until(lambda: kimi().get("status") == "ready" and kimi(), timeout=30, message="kimi ready")

    result = groupx("restart-agent", "kimi", "--config", str(config), workdir=tmp_path)
    refused = groupx("restart-agent", "nobody", "--config", str(config), workdir=tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"Restarting agent:kimi (replacing {before['instanceId']})")
    wait_until(
        lambda: kimi().get("status") == "ready" and kimi()["instanceId"] != before["instanceId"],
        timeout=30,
        message="kimi ready on a new instance",
    )
    assert refused.returncode == 1 and "UNKNOWN_ACTOR" in refused.stderr


def test_restart_agent_needs_a_name_and_a_running_instance(tmp_path):
    config = write_config(tmp_path, free_port())

    nameless = groupx("restart-agent", "--config", str(config), workdir=tmp_path)
    nothing_running = groupx("restart-agent", "kimi", "--config", str(config), workdir=tmp_path)

    assert nameless.returncode == 1 and "needs the agent's name" in nameless.stderr
    assert nothing_running.returncode == 1 and "no GroupX instance is running" in nothing_running.stderr


def test_restart_with_nothing_running_suggests_start(tmp_path):
    port = free_port()
    config = write_config(tmp_path, port)

    result = groupx("restart", "--config", str(config), "--no-open", workdir=tmp_path)

    assert result.returncode != 0
    assert "groupx start" in result.stderr
    assert port_refuses(port)  # restart never starts from nothing


# --- the shutdown endpoint ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def survivor(tmp_path_factory):
    """One server for the shutdown requests that must not stop anything."""
    workdir = tmp_path_factory.mktemp("survivor")
    server = GroupXServer(
        workdir, {"agents": {"sleeper": hanging_agent(workdir)}, "timeouts": {"handshakeMs": 600000, "closeMs": 300}}
    )
    server.start()
    yield server
    server.stop()


def test_shutdown_with_a_wrong_scope_key_is_a_conflict_and_nothing_stops(survivor):
    server = survivor

    response = server.post("/api/runtime/shutdown", {"runtimeScopeKey": "0" * 64})

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "STORE_CONFLICT"
    assert server.proc.poll() is None
    assert server.get("/api/health").json()["readiness"] == "ready"


@pytest.mark.parametrize("body", [{}, {"runtimeScopeKey": "abc"}, {"runtimeScopeKey": "0" * 64, "force": True}])
def test_shutdown_refuses_a_malformed_body(survivor, body):
    server = survivor

    response = server.post("/api/runtime/shutdown", body)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "INVALID_ENVELOPE"
    assert server.get("/api/health").json()["readiness"] == "ready"


def test_shutdown_with_the_scope_key_answers_202_then_releases_the_port(make_server):
    server = make_server()
    identity = server.get("/api/health").json()

    response = server.post("/api/runtime/shutdown", {"runtimeScopeKey": identity["runtimeScopeKey"]})

    assert response.status_code == 202
    assert response.json() == {
        "accepted": True,
        "runtimeKey": identity["runtimeKey"],
        "runtimeScopeKey": identity["runtimeScopeKey"],
    }
    assert server.proc.wait(timeout=20) == 0


# --- small commands -----------------------------------------------------------------------------


def test_unknown_command_exits_1_with_help(tmp_path):
    result = groupx("frobnicate", workdir=tmp_path)

    assert result.returncode == 1
    assert "unknown command" in result.stderr and "usage: groupx" in result.stderr


@pytest.mark.parametrize("flag", ["--version", "-v", "version"])
def test_version_prints_the_version(tmp_path, flag):
    result = groupx(flag, workdir=tmp_path)

    assert result.returncode == 0 and result.stdout.startswith("groupx ")


@pytest.mark.parametrize("flag", ["--help", "-h", "help"])
def test_help_lists_the_commands(tmp_path, flag):
    result = groupx(flag, workdir=tmp_path)

    assert result.returncode == 0
    assert all(name in result.stdout for name in ("start", "stop", "restart", "init", "doctor"))


def test_doctor_finds_a_cli_on_path_and_summarises_the_config(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kimi").symlink_to(FAKES_BIN / "kimi")
    config = write_config(
        tmp_path, 4310, {"kimi": fake(tmp_path, "kimi"), "off": {**fake(tmp_path, "grok"), "enabled": False}}
    )
    env = cli_env(tmp_path, PATH=f"{bin_dir}{os.pathsep}/usr/bin:/bin")

    result = groupx("doctor", "--config", str(config), workdir=tmp_path, env=env)

    assert result.returncode == 0, result.stdout
    assert f"kimi: {bin_dir / 'kimi'}" in result.stdout
    assert "codex: not found on PATH" in result.stdout
    assert "agents: 2 (1 enabled)" in result.stdout
    assert "python:" in result.stdout and "django:" in result.stdout
    assert "interpreter core: " in result.stdout


def test_doctor_fails_without_any_agent_cli_and_shows_a_config_error(tmp_path):
    config = tmp_path / "groupx.json"
    config.write_text('{"transport": "direct"}')
    env = cli_env(tmp_path, PATH="/usr/bin:/bin")

    result = groupx("doctor", "--config", str(config), workdir=tmp_path, env=env)

    assert result.returncode == 1
    assert "parse error" in result.stdout and "deprecated" in result.stdout


def test_doctor_says_when_the_channel_layers_redis_does_not_answer_without_hanging(tmp_path):
    port = free_port()  # nothing listens there
    config = write_config(tmp_path, 4310, channelLayer={"redisUrl": f"redis://127.0.0.1:{port}/0"})
    env = cli_env(tmp_path, PATH=f"{isolated_path(tmp_path, 'kimi')}{os.pathsep}/usr/bin:/bin")

    result = groupx("doctor", "--config", str(config), workdir=tmp_path, env=env, timeout=30)

    assert result.returncode == 1, result.stdout
    assert f"channel layer: redis://127.0.0.1:{port}/0 is unreachable" in result.stdout
    assert "the channel layer's Redis does not answer" in result.stdout


def test_doctor_without_a_channel_layer_names_the_in_memory_one(tmp_path):
    config = write_config(tmp_path, 4310)
    env = cli_env(tmp_path, PATH=f"{isolated_path(tmp_path, 'kimi')}{os.pathsep}/usr/bin:/bin")

    result = groupx("doctor", "--config", str(config), workdir=tmp_path, env=env)

    assert result.returncode == 0, result.stdout
    assert "channel layer: in memory" in result.stdout


def test_split_mode_refuses_to_start_without_a_redis_url_and_starts_nothing(tmp_path):
    port = free_port()
    config = write_config(tmp_path, port)

    result = groupx("start", "--split", "--no-open", "--config", str(config), workdir=tmp_path)

    assert result.returncode == 1
    assert "split mode needs a channel layer" in result.stderr and "channelLayer" in result.stderr
    assert port_refuses(port)


def test_split_mode_refuses_to_start_when_redis_does_not_answer_and_starts_nothing(tmp_path):
    port, redis_port = free_port(), free_port()
    config = write_config(tmp_path, port, channelLayer={"redisUrl": f"redis://127.0.0.1:{redis_port}"})

    result = groupx("start", "--split", "--no-open", "--config", str(config), workdir=tmp_path, timeout=30)

    assert result.returncode == 1
    assert f"the Redis at redis://127.0.0.1:{redis_port} (channelLayer.redisUrl) does not answer" in result.stderr
    assert port_refuses(port) and not (tmp_path / ".groupx" / "groupx.db").exists()


def test_groupx_manage_runs_management_commands_on_the_configs_room_including_the_first_admin(tmp_path):
    import sqlite3

    config = write_config(tmp_path, free_port())
    env = cli_env(tmp_path, DJANGO_SUPERUSER_PASSWORD="first-admin-pw")
    migrated = groupx("manage", "--config", str(config), "migrate", "-v0", workdir=tmp_path, env=env)
    assert migrated.returncode == 0, migrated.stderr
    created = groupx(
        "manage",
        f"--config={config}",
        "createsuperuser",
        "--noinput",
        "--username",
        "admin",
        "--email",
        "admin@example.com",
        workdir=tmp_path,
        env=env,
    )
    assert created.returncode == 0, created.stderr
    db = sqlite3.connect(tmp_path / ".groupx" / "groupx.db")
    try:
        assert db.execute("SELECT username, is_superuser FROM auth_user").fetchall() == [("admin", 1)]
    finally:
        db.close()
    unknown = groupx("manage", "--config", str(config), "no_such_command", workdir=tmp_path, env=env)
    assert unknown.returncode == 1 and "Unknown command: 'no_such_command'" in unknown.stderr


def test_doctor_names_the_demo_room_and_exits_1_without_an_agent_cli(tmp_path):
    config = tmp_path / "groupx.json"
    # The demo room as the starter config writes it when no agent CLI is on PATH.
    config.write_text(
        json.dumps(
            {
                "agents": {
                    f"demo-{driver}": {"driver": driver, "command": f"groupx-demo:{driver}", "cwd": str(tmp_path)}
                    for driver in ("kimi", "codex")
                }
            }
        )
    )
    env = cli_env(tmp_path, PATH=isolated_path(tmp_path))

    result = groupx("doctor", "--config", str(config), workdir=tmp_path, env=env)

    assert result.returncode == 1  # FEATURES §2.2: no agent CLI found
    assert "this is the demo room: its bundled demo agents answer" in result.stdout, result.stdout
    assert "agent:demo-kimi [kimi, enabled]" in result.stdout and "(ok)" in result.stdout
    assert "groupx: " in result.stdout  # the release


def test_doctor_warns_when_another_distribution_provides_one_of_groupxs_top_level_modules(tmp_path):
    site = tmp_path / "site"
    info = site / "memory_tools-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: memory-tools\nVersion: 1.0\n")
    (info / "top_level.txt").write_text("memory\n")
    config = write_config(tmp_path, free_port())
    env = cli_env(tmp_path, PYTHONPATH=str(site))

    result = groupx("doctor", "--config", str(config), workdir=tmp_path, env=env)

    assert "the module `memory` is also provided by memory-tools" in result.stdout, result.stdout
    assert "isolated tool environment" in result.stdout

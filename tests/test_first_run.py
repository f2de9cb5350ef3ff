"""First run (docs/DECISIONS.md D26): one command from a fresh checkout to a working room.

Every command runs as a real process in a fresh work directory with no ``groupx.json`` and, on its
``PATH``, no agent CLI: the starter config then names the bundled demo agents by absolute path.
The port is a free one, never the user's 4310.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.groupx_cli import Foreground, cli_env, groupx, isolated_path, port_refuses
from tests.server import FAKES_BIN, REPO, free_port, wait_until
from tests.sse import SseClient


def fresh_env(workdir: Path, **extra: str) -> dict:
    return cli_env(workdir, PATH=isolated_path(workdir), **extra)


@pytest.fixture
def foreground():
    started: list[Foreground] = []

    def start(workdir, *args, env=None) -> Foreground:
        started.append(Foreground(workdir, *args, env=env))
        return started[-1]

    yield start
    for process in started:
        process.terminate()


def test_a_first_start_writes_the_demo_roster_and_serves_a_room_the_demo_agents_answer_in(tmp_path, foreground):
    port = free_port()
    config = tmp_path / "groupx.json"

    room = foreground(
        tmp_path, "start", "--config", str(config), "--port", str(port), "--no-open", env=fresh_env(tmp_path)
    )
    ready = room.wait_ready(port)

    written = json.loads(config.read_text())
    assert written["server"] == {"host": "127.0.0.1", "port": port}
    # Named in a form resolved at run time (the installed package's launchers), never by a path of
    # this install: a demo room survives a reinstall of GroupX elsewhere.
    assert {a["command"] for a in written["agents"].values()} == {
        f"groupx-demo:{d}" for d in ("kimi", "hermes", "grok", "codex", "claude")
    }
    assert all((FAKES_BIN / d).is_file() for d in ("kimi", "hermes", "grok", "codex", "claude", "demo-assistant"))
    agent_ids = [a["actorId"] for a in ready["agents"]]
    assert sorted(agent_ids) == sorted(f"agent:{agent_id}" for agent_id in written["agents"])
    assert f"wrote a starter {config}" in room.output()
    assert f"GroupX is ready at http://127.0.0.1:{port}" in room.output()
    assert stat.S_IMODE((tmp_path / ".groupx").stat().st_mode) == 0o700  # it holds the bindings (D39)
    with SseClient(f"http://127.0.0.1:{port}", after_seq=0) as stream:
        accepted = httpx.post(
            f"http://127.0.0.1:{port}/api/messages",
            timeout=10,
            json={"clientCommandId": f"first-{uuid.uuid4()}", "to": agent_ids, "content": "hello, demo room"},
        )
        assert accepted.status_code == 202, accepted.text
        turn_ids = {turn["turnId"] for turn in accepted.json()["turns"]}
        assert len(turn_ids) == len(agent_ids)

        def all_completed():
            return {e["body"]["turnId"] for e in stream.durable if e["type"] == "turn.completed"} >= turn_ids

        wait_until(all_completed, timeout=60, interval=0.1, message="turn.completed from every demo agent")
    # The demo assistant (D47) asks every agent for a status through the operator tools.
    assistant = f"http://127.0.0.1:{port}/api/assistant"
    wait_until(
        lambda: httpx.get(assistant, timeout=10).json()["status"] == "ready",
        timeout=60,
        message="the demo assistant ready",
    )
    answer = httpx.post(
        f"{assistant}/messages",
        timeout=180,
        json={"clientCommandId": "first-assistant", "content": "ask every agent for a status and summarise"},
    )
    assert answer.status_code == 200, answer.text
    summary = answer.json()["assistantMessage"]["content"]
    assert summary.startswith(f"I asked {len(agent_ids)} agent(s) for a status:")
    assert all(f"- {agent_id}: echo: " in summary for agent_id in agent_ids), summary
    assert groupx("stop", "--config", str(config), workdir=tmp_path).returncode == 0
    assert room.wait_exit() == 0, room.output()


def test_init_without_a_config_starts_the_room_and_points_at_the_setup_page(tmp_path, foreground):
    port = free_port()
    config = tmp_path / "groupx.json"

    room = foreground(
        tmp_path, "init", "--config", str(config), "--port", str(port), "--no-open", env=fresh_env(tmp_path)
    )
    room.wait_ready(port)

    wait_until(
        lambda: f"Change the agents at http://127.0.0.1:{port}/setup" in room.output(),
        timeout=10,
        message="the /setup address on stdout",
    )
    assert httpx.get(f"http://127.0.0.1:{port}/api/setup", timeout=10).json()["existing"] is True
    again = groupx("init", "--config", str(config), "--no-open", workdir=tmp_path)
    assert again.returncode == 0 and f"http://127.0.0.1:{port}/setup" in again.stdout


def test_agent_clis_found_on_path_are_the_starter_roster_instead_of_the_demo_agents(tmp_path):
    env = cli_env(tmp_path, PATH=isolated_path(tmp_path, "kimi", "claude"), GROUPX_CONFIG=str(tmp_path / "groupx.json"))

    written = subprocess.run(
        [sys.executable, "manage.py", "init_config"], cwd=REPO, env=env, timeout=60, capture_output=True, text=True
    )

    assert written.returncode == 0, written.stderr
    assert "agent:kimi, agent:claude" in written.stdout and "demo" not in written.stdout
    agents = json.loads((tmp_path / "groupx.json").read_text())["agents"]
    assert agents == {"kimi": {"cwd": str(tmp_path)}, "claude": {"cwd": str(tmp_path)}}


def test_a_first_setup_with_a_real_cli_turns_the_room_assistant_on_with_that_cli_as_its_brain(tmp_path):
    env = cli_env(tmp_path, PATH=isolated_path(tmp_path, "claude"), GROUPX_CONFIG=str(tmp_path / "groupx.json"))

    written = subprocess.run(
        [sys.executable, "manage.py", "init_config"], cwd=REPO, env=env, timeout=60, capture_output=True, text=True
    )

    assert written.returncode == 0, written.stderr
    assistant = json.loads((tmp_path / "groupx.json").read_text())["assistant"]
    assert assistant == {"enabled": True, "brain": {"driver": "claude", "cwd": str(tmp_path)}}


def test_a_port_option_that_disagrees_with_an_existing_config_is_refused(tmp_path):
    config = tmp_path / "groupx.json"
    config.write_text(json.dumps({"server": {"host": "127.0.0.1", "port": 4999}}))

    refused = groupx("start", "--config", str(config), "--port", "5000", "--no-open", workdir=tmp_path)

    assert refused.returncode == 1
    assert "already sets server.port 4999" in refused.stderr


# --- manage.py runserver ------------------------------------------------------------------------


def runserver(workdir: Path, address: str, *options: str) -> subprocess.Popen:
    """``manage.py runserver`` in its own process group: with the autoreloader the server is a
    child of the command, and both must go at the end."""
    log = open(workdir / "runserver.log", "ab")  # noqa: SIM115 (the child owns it)
    return subprocess.Popen(
        [sys.executable, "manage.py", "runserver", address, *options],
        cwd=REPO,
        env=fresh_env(workdir, GROUPX_CONFIG=str(workdir / "groupx.json")),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.parametrize(
    ("address", "origin", "options"),
    [
        ("127.0.0.1:{port}", "http://127.0.0.1:{port}", ("--noreload",)),
        ("{port}", "http://127.0.0.1:{port}", ()),  # the bare port, with Django's autoreloader as people run it
        ("localhost:{port}", "http://localhost:{port}", ("--noreload",)),
        pytest.param(
            "[::1]:{port}",
            "http://[::1]:{port}",
            ("--noreload",),
            marks=pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 loopback here"),
        ),
    ],
    ids=["ipv4", "bare-port-with-reloader", "localhost", "ipv6"],
)
def test_runserver_on_a_fresh_checkout_writes_the_config_migrates_and_serves_a_ready_room(
    tmp_path, address, origin, options
):
    port = free_port()
    origin = origin.format(port=port)
    server = runserver(tmp_path, address.format(port=port), *options)
    try:

        def ready():
            assert server.poll() is None, (tmp_path / "runserver.log").read_text()
            try:
                found = httpx.get(f"{origin}/api/health", timeout=2).json()
            except (httpx.HTTPError, ValueError):
                return None
            return found if found["readiness"] == "ready" else None

        found = wait_until(ready, timeout=60, interval=0.1, message="a ready room from runserver")
        assert {a["actorId"] for a in found["agents"]} >= {"agent:demo-kimi", "agent:demo-claude"}
        assert httpx.get(f"{origin}/api/bootstrap", timeout=10).status_code == 200
        log = (tmp_path / "runserver.log").read_text()
        assert "wrote a starter" in log and "unapplied migration" not in log
    finally:
        stop_group(server)


def serving_child(pid: int) -> int | None:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return int(children[0]) if children else None


def test_runserver_restarts_its_serving_child_when_a_project_file_changes(tmp_path):
    # The serving child's reloader looks at GroupX's own files every second (D79).
    port = free_port()
    server = runserver(tmp_path, str(port))
    origin = f"http://127.0.0.1:{port}"

    def ready():
        assert server.poll() is None, (tmp_path / "runserver.log").read_text()
        try:
            return httpx.get(f"{origin}/api/health", timeout=2).json()["readiness"] == "ready"
        except (httpx.HTTPError, ValueError):
            return False

    try:
        wait_until(ready, timeout=60, interval=0.1, message="a ready room from runserver")
        first = serving_child(server.pid)
        edited = REPO / "groupx_site" / "urls.py"

        def restarted():
            now = time.time()
            os.utime(edited, (now, now))  # as an editor's save would (again each poll: no tick is missed)
            child = serving_child(server.pid)
            return child not in (None, first)

        wait_until(restarted, timeout=60, interval=0.5, message="runserver to restart its serving child")
        wait_until(ready, timeout=60, interval=0.1, message="the restarted room to be ready")
        assert "Watching for file changes with GroupXStatReloader" in (tmp_path / "runserver.log").read_text()
    finally:
        stop_group(server)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "[::]", "0"])
def test_runserver_refuses_an_address_off_loopback_without_binding(tmp_path, host):
    port = free_port()
    refused = subprocess.run(
        [sys.executable, "manage.py", "runserver", f"{host}:{port}"],
        cwd=REPO,
        timeout=60,
        env=fresh_env(tmp_path, GROUPX_CONFIG=str(tmp_path / "groupx.json")),
        capture_output=True,
        text=True,
    )

    assert refused.returncode != 0
    assert "GroupX listens on loopback only" in refused.stderr
    assert f"manage.py runserver 127.0.0.1:{port}" in refused.stderr
    assert not (tmp_path / "groupx.json").exists()  # refused before anything was written
    assert port_refuses(port)

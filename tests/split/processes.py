"""The processes of split mode for the tests: a Redis server on loopback, and the agents' workers
(``manage.py runworker groupx-agents``) beside the daphne web processes of ``tests/server.py``."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.server import REPO, GroupXServer, free_port, wait_until

OWNS = "this worker owns the room's agents"
RUNS = "this worker runs agents"  # a worker of --agents took some of its agents (D58)
STANDS_BY = "stands by"


def redis_server_binary() -> str:
    """Debian's redis-server, installed with apt when missing (as root); else the tier skips."""
    found = shutil.which("redis-server")
    if found:
        return found
    if shutil.which("apt-get") and _is_root():
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "redis-server"],
            check=False,
            timeout=600,
            capture_output=True,
            env={"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
        )
        found = shutil.which("redis-server")
    if not found:
        pytest.skip("redis-server is not installed and cannot be installed here")
    return found


def _is_root() -> bool:
    import os

    return os.geteuid() == 0


class RedisServer:
    """redis-server on a free loopback port, no persistence (nothing written to disk), in the
    foreground of its own subprocess; ``restart`` keeps the port (a Redis restarted mid-run)."""

    def __init__(self, workdir: Path):
        self.binary = redis_server_binary()
        self.workdir = workdir
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        log = open(self.workdir / "redis.log", "ab")  # noqa: SIM115 (the child owns it)
        self.proc = subprocess.Popen(
            [
                self.binary,
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        wait_until(self.answers, timeout=30, message="redis-server to answer PING")
        return self

    def answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as connection:
                connection.sendall(b"PING\r\n")
                return connection.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)

    def restart(self) -> None:
        self.stop()
        self.start()


def doctor(web: GroupXServer) -> str:
    """``groupx doctor`` for the room of ``web`` (its config, its database)."""
    return subprocess.run(
        [sys.executable, "-m", "groupx_site", "doctor"],
        cwd=REPO,
        env=web.env,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout


class AgentsWorker:
    """``manage.py runworker groupx-agents`` for the room of ``web`` (same config, same database)."""

    def __init__(self, web: GroupXServer, name: str, *, agents: str | None = None):
        self.web = web
        self.agents = agents  # ``--agents``: the agents this worker runs (docs/DECISIONS.md D58)
        self.log_path = web.workdir / f"{name}.log"
        self.proc: subprocess.Popen | None = None
        self._offset = 0

    def start(self, *, expect: str = OWNS, timeout: float = 60) -> AgentsWorker:
        self.launch()
        self.wait_for(expect, timeout=timeout)
        return self

    def launch(self) -> AgentsWorker:
        """Start the process without waiting for it (several workers starting at the same moment)."""
        self._offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        log = open(self.log_path, "ab")  # noqa: SIM115 (the child owns it)
        command = [sys.executable, "manage.py", "runworker", "groupx-agents"]
        if self.agents is not None:
            command += ["--agents", self.agents]
        self.proc = subprocess.Popen(command, cwd=REPO, env=self.web.env, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        return self

    def wait_for(self, text: str, *, timeout: float = 60) -> None:
        def logged():
            if text in self.log():
                return True
            if self.proc.poll() is not None:
                raise AssertionError(f"the worker exited with {self.proc.returncode}:\n{self.log()}")
            return False

        wait_until(logged, timeout=timeout, interval=0.05, message=f"the worker to log {text!r}")

    def log(self) -> str:
        if not self.log_path.exists():
            return ""
        with open(self.log_path, "rb") as f:
            f.seek(self._offset)
            return f.read().decode(errors="replace")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self, *, timeout: float = 30) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

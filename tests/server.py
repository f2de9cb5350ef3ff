"""A real GroupX server in a subprocess: daphne on port 0, its own config and SQLite file.

Tests talk to it only over HTTP/SSE/MCP on 127.0.0.1, exactly as a browser or a CLI would.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from tests.pg.databases import room_database_url
from tests.procs import status_bytes

REPO = Path(__file__).resolve().parents[1]
FAKES_BIN = REPO / "agents" / "fakes" / "bin"
LISTENING = re.compile(r"Listening on TCP address 127\.0\.0\.1:(\d+)")
# make test-plain: every test server runs with the speed seam switched off (``server.speedups:
# false``: plain Django, daphne, twisted and SQLite), unless its test sets ``server.speedups`` itself.
# The one place the tests read this variable (docs/DECISIONS.md D129).
SPEEDUPS_OFF = os.environ.get("GROUPX_TEST_SPEEDUPS", "").strip().lower() == "false"


def wait_until(predicate, *, timeout: float = 10.0, interval: float = 0.02, message: str = "condition"):
    """Poll ``predicate`` until it returns a truthy value or the deadline passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")
        time.sleep(interval)


def free_port() -> int:
    """A loopback port free at the time of asking (the one copy tests and benches share)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def peak_resident_bytes(pid: int) -> int:
    """The process's high-water resident set (VmHWM), from /proc."""
    return status_bytes(pid, "VmHWM")


class GroupXServer:
    def __init__(self, workdir: Path, config: dict, *, env: dict | None = None, name: str = "server"):
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config_path = workdir / "groupx.json"
        self.log_path = workdir / f"{name}.log"  # two processes of one room (split mode) log apart
        self.fake_log_dir = workdir / "fake-logs"
        self.fake_log_dir.mkdir(exist_ok=True)
        self.write_config(config)
        self.env = {
            **os.environ,
            "GROUPX_CONFIG": str(self.config_path),
            "GROUPX_FAKE_LOG_DIR": str(self.fake_log_dir),
            "GROUPX_FAKE_STATE_DIR": str(workdir / "fake-state"),
            "PYTHONUNBUFFERED": "1",
            # Readiness would wait up to a handshake timeout for the agents' sessions (D42), and
            # most tests' agents hang in their handshake on purpose (``hanging_agent``) so that
            # their Turns stay queued. The tests of the start-up order pass their own value.
            "GROUPX_SESSION_START_WAIT_MS": "0",
            **(env or {}),
        }
        self.proc: subprocess.Popen | None = None
        self.base_url = ""
        self._log_offset = 0

    def write_config(self, config: dict) -> None:
        # make test-pg: every room on a PostgreSQL database of its own (tests/pg/databases.py).
        if "storage" not in config and (url := room_database_url(self.workdir)):
            config = {**config, "storage": {"url": url}}
        server = config.get("server") or {}
        if SPEEDUPS_OFF and "speedups" not in server:
            config = {**config, "server": {**server, "speedups": False}}
        self.config_path.write_text(json.dumps(config, indent=2))

    def sqlite_store(self) -> Path | None:
        """The room's SQLite file as its config names it (None when the room is on PostgreSQL)."""
        storage = json.loads(self.config_path.read_text()).get("storage") or {}
        if storage.get("url"):
            return None
        return self.workdir / storage.get("path", ".groupx/groupx.db")

    def manage(
        self, *args: str, check: bool = True, timeout: float = 60, input: str | None = None
    ) -> subprocess.CompletedProcess:  # noqa: A002 (subprocess's name)
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env=self.env,
            check=check,
            timeout=timeout,
            capture_output=True,
            text=True,
            input=input,
        )

    def start(
        self, *, timeout: float = 60.0, port: int = 0, migrate: bool = True, wait_ready: bool = True
    ) -> GroupXServer:
        """Start daphne on ``port`` (0: any free port) and wait until it listens and, unless
        ``wait_ready`` is False, until it is ready."""
        if migrate:
            store = self.sqlite_store()
            if store is not None and not store.exists():
                _copy_migrated_template(store)  # a new room: the session's migrated template
            else:
                self.manage("migrate", "--noinput", "-v0")
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        log = open(self.log_path, "ab")  # noqa: SIM115 (the child owns it for its lifetime)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "groupx_site.asgi:application"],
            cwd=REPO,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()

        def bound_port():
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited with {self.proc.returncode}:\n{self.log()}")
            match = LISTENING.search(self.log())
            return match and int(match.group(1))

        port = wait_until(bound_port, timeout=timeout, message="the server to listen")
        self.base_url = f"http://127.0.0.1:{port}"
        if wait_ready:
            wait_until(lambda: self.readiness() == "ready", timeout=timeout, message="readiness ready")
        return self

    @property
    def port(self) -> int:
        return int(self.base_url.rsplit(":", 1)[1])

    def restart(self, *, timeout: float = 60.0) -> GroupXServer:
        """Stop, then start again on the same port (a "network drop" for clients that reconnect)."""
        port = self.port
        self.stop()
        return self.start(timeout=timeout, port=port)

    def readiness(self) -> str | None:
        try:
            return httpx.get(f"{self.base_url}/api/health", timeout=2).json().get("readiness")
        except httpx.HTTPError:
            return None

    def log(self) -> str:
        if not self.log_path.exists():
            return ""
        with open(self.log_path, "rb") as f:
            f.seek(self._log_offset)
            return f.read().decode(errors="replace")

    def stop(self, *, timeout: float = 20.0) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    def post(self, path: str, body, **kwargs) -> httpx.Response:
        return httpx.post(self.url(path), json=body, timeout=kwargs.pop("timeout", 10), **kwargs)

    def get(self, path: str, **kwargs) -> httpx.Response:
        return httpx.get(self.url(path), timeout=kwargs.pop("timeout", 10), **kwargs)

    def events(self, after_seq: int = 0) -> list[dict]:
        """Every durable event after ``after_seq``, read the way a client does: the bootstrap's
        cursor says where the log ends, then the SSE replay is read up to it."""
        head = self.get("/api/bootstrap").json()["room"]["throughSeq"]
        if head <= after_seq:
            return []
        found: list[dict] = []
        with httpx.stream("GET", self.url(f"/api/events?afterSeq={after_seq}"), timeout=30) as response:
            for line in response.iter_lines():
                if line.startswith("data: ") and found is not None:
                    envelope = json.loads(line[6:])
                    if envelope.get("seq") is None:
                        continue
                    found.append(envelope)
                    if envelope["seq"] >= head:
                        break
        return found


_TEMPLATE: Path | None = None


def _copy_migrated_template(target: Path) -> None:
    """Migrations run once per test session into a template database that each server copies:
    running ``migrate`` in a subprocess for every server would dominate the suite's time."""
    global _TEMPLATE
    if _TEMPLATE is None:
        folder = Path(tempfile.mkdtemp(prefix="groupx-template-"))
        (folder / "groupx.json").write_text('{"agents": {"kimi": {"cwd": "."}}}')
        env = {**os.environ, "GROUPX_CONFIG": str(folder / "groupx.json")}
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=REPO, env=env, check=True, timeout=120
        )
        _TEMPLATE = folder / ".groupx" / "groupx.db"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_TEMPLATE, target)


def fake_agent(driver: str, workdir: Path, **extra) -> dict:
    """An agent entry whose command is the bundled fake CLI shim for ``driver``."""
    cwd = workdir / f"cwd-{driver}-{extra.pop('suffix', '')}".rstrip("-")
    cwd.mkdir(parents=True, exist_ok=True)
    return {"driver": driver, "command": str(FAKES_BIN / driver), "cwd": str(cwd), **extra}


def hanging_agent(workdir: Path, name: str = "sleeper") -> dict:
    """An agent whose CLI never answers its handshake, so its Turns stay queued."""
    script = workdir / f"{name}.sh"
    script.write_text("#!/bin/sh\nexec sleep 600\n")
    script.chmod(0o755)
    cwd = workdir / f"cwd-{name}"
    cwd.mkdir(parents=True, exist_ok=True)
    return {"driver": "kimi", "command": str(script), "cwd": str(cwd)}

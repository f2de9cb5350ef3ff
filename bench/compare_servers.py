"""The servers `make bench-compare` measures, each started the way its user starts it.

- ``reference``: the public TypeScript GroupX, ``node dist/src/cli.js start --no-open --config …``;
- ``start``: GroupX's ``groupx start`` (``python -m groupx_site start --config … --no-open``);
- ``runserver``: GroupX's ``python manage.py runserver``, autoreloader included (what a developer
  runs); the figures are the serving child's, the reloader parent only waits for it;
- ``split``: GroupX's split mode, ``groupx start --split`` (the split-mode work: the web process and the
  agents' worker, ``manage.py runworker groupx-agents``, over Redis), on its own ``redis-server``
  started on a free loopback port without persistence, as ``tests/split/`` does. The harness
  measures the web process; the worker's CPU and peak RSS are read beside it (``worker_pid``).

All three serve one room on a free loopback port with the same three instant fake ACP agents
(``bench/anchor/fake_acp_agent.py``, driver ``kimi``, ids ``kimi``, ``grok``, ``hermes``: the only
ids the reference's REST layer accepts as targets). Each gets a fresh directory and database.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from bench.memory import children
from bench.server import settle, wait_until
from tests.server import free_port
from tests.split.processes import RedisServer

REPO = Path(__file__).resolve().parents[1]
FAKE_AGENT = REPO / "bench" / "anchor" / "fake_acp_agent.py"
AGENT_IDS = ("kimi", "grok", "hermes")
ENTRY_POINTS = ("start", "runserver", "split")


class Unavailable(RuntimeError):
    """This entry point cannot run on this machine (its column is skipped, with the reason)."""


def tree(pid: int) -> list[int]:
    """The process and its descendants, by parent id from /proc (never by name)."""
    seen, stack = [], [pid]
    while stack:
        current = stack.pop()
        if current not in seen:
            seen.append(current)
            stack.extend(children(current))
    return seen


class Server:
    """One started server: ``pid`` is the process that serves (whose CPU and RSS are measured)."""

    def __init__(self, kind: str, workdir: Path, reference_dir: Path | None = None, node: Path | None = None):
        self.kind = kind
        self.workdir = workdir
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.reference_dir, self.node = reference_dir, node
        self.proc: subprocess.Popen | None = None
        self.redis: RedisServer | None = None
        self.pid = 0
        self.worker_pid = 0
        self.log_path = workdir / "server.log"
        workdir.mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------------ configs
    def _reference_command(self) -> list[str]:
        # The reference's kimi driver runs a command string (it appends `acp`): a one-line wrapper.
        wrapper = self.workdir / "fake-acp-agent"
        wrapper.write_text(f"#!/bin/sh\nexec '{sys.executable}' '{FAKE_AGENT}' \"$@\"\n")
        wrapper.chmod(0o755)
        agents = {
            agent: {
                "driver": "kimi",
                "name": f"Fake-{i}",
                "command": str(wrapper),
                "cwd": str(self.workdir),
                "enabled": True,
            }
            for i, agent in enumerate(AGENT_IDS, 1)
        }
        config = self.workdir / "groupx.json"
        config.write_text(
            json.dumps(
                {
                    "transport": "structured",
                    "server": {"host": "127.0.0.1", "port": self.port},
                    "storage": {"path": str(self.workdir / "data" / "groupx.db")},
                    "agents": agents,
                },
                indent=2,
            )
        )
        return [
            str(self.node),
            str(self.reference_dir / "dist" / "src" / "cli.js"),
            "start",
            "--no-open",
            "--config",
            str(config),
        ]

    def _groupx_config(self) -> Path:
        command = {"executable": sys.executable, "prefixArgs": [str(FAKE_AGENT)]}
        agents = {
            agent: {"driver": "kimi", "name": f"Fake-{i}", "command": command, "cwd": str(self.workdir)}
            for i, agent in enumerate(AGENT_IDS, 1)
        }
        document = {"server": {"host": "127.0.0.1", "port": self.port}, "agents": agents}
        if self.kind == "split":
            document["channelLayer"] = {"redisUrl": self._start_redis()}
        config = self.workdir / "groupx.json"
        config.write_text(json.dumps(document, indent=2))
        return config

    def _start_redis(self) -> str:
        if shutil.which("redis-server") is None:
            raise Unavailable(
                "split mode needs redis-server (Debian's redis-server package; make test-split installs it)"
            )
        self.redis = RedisServer(self.workdir).start()  # the split tier's throwaway Redis on loopback
        return self.redis.url

    def _command(self) -> tuple[list[str], dict]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GROUPX_")}
        env["PYTHONUNBUFFERED"] = "1"
        if self.kind == "reference":
            return self._reference_command(), env
        env["GROUPX_CONFIG"] = str(self._groupx_config())
        if self.kind == "start":
            return [sys.executable, "-m", "groupx_site", "start", "--config", env["GROUPX_CONFIG"], "--no-open"], env
        if self.kind == "runserver":
            return [sys.executable, "manage.py", "runserver"], env
        if self.kind == "split":
            return [
                sys.executable,
                "-m",
                "groupx_site",
                "start",
                "--split",
                "--config",
                env["GROUPX_CONFIG"],
                "--no-open",
            ], env
        raise ValueError(f"unknown server kind {self.kind!r}")

    # ------------------------------------------------------------------ life
    def start(self, timeout: float = 120.0) -> Server:
        argv, env = self._command()
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                argv,
                cwd=REPO if self.kind != "reference" else self.workdir,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        self.pid = self.proc.pid
        if self.kind == "runserver":  # the autoreloader's child serves
            self.pid = wait_until(self._serving_child, timeout, "runserver's serving child")
        wait_until(self._ready, timeout, f"{self.kind} to be ready with {len(AGENT_IDS)} agents (log: {self.log_path})")
        if self.kind == "split":  # the supervisor waits; its web child serves, its worker child runs the agents
            self.pid, self.worker_pid = self._split_children()
        settle(self.pid, bound=15.0)  # the same for every server: its start-up work is in no figure
        return self

    def _serving_child(self) -> int | None:
        self._check_alive()
        kids = children(self.proc.pid)
        return kids[0] if kids else None

    def _split_children(self) -> tuple[int, int]:
        web = worker = 0
        for pid in children(self.proc.pid):
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"runworker" in argv:
                worker = pid
            elif b"start" in argv:
                web = pid
        if not (web and worker):
            raise RuntimeError(f"split mode's web and worker processes not found under pid {self.proc.pid}")
        return web, worker

    def _check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.kind} exited with {self.proc.returncode}; see {self.log_path}")

    def _ready(self) -> bool:
        self._check_alive()
        try:
            health = httpx.get(f"{self.base_url}/api/health", timeout=2, trust_env=False).json()
        except (httpx.HTTPError, ValueError):
            return False
        agents = health.get("agents") or []
        ready = health.get("status") == "ok" if self.kind == "reference" else health.get("readiness") == "ready"
        return ready and len(agents) >= len(AGENT_IDS) and all(a.get("status") == "ready" for a in agents)

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM to the serving process (runserver's reloader parent then exits with it), then
        SIGKILL, by id, to anything of this server's process tree still alive."""
        if self.proc is None:
            self._stop_redis()
            return
        members = tree(self.proc.pid)
        with contextlib.suppress(ProcessLookupError):
            # split mode's supervisor stops both of its children on SIGTERM
            os.kill(self.proc.pid if self.kind == "split" else self.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for pid in members[1:]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc = None
        self._stop_redis()

    def _stop_redis(self) -> None:
        if self.redis is not None:
            self.redis.stop()
            self.redis = None

"""A real GroupX server for the benchmarks: daphne on port 0 with its own groupx.json and SQLite.

Like tests/server.py, but tuned for measuring: the fake ACP CLIs answer instantly
(``GROUPX_FAKE_TIME_SCALE=0``, a one-line ``reply`` scenario) and write no wire log, so the
figures are the broker's own cost and not the fakes' logging.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

from tests.server import free_port

REPO = Path(__file__).resolve().parents[1]
FAKES_BIN = REPO / "agents" / "fakes" / "bin"
LISTENING = re.compile(r"Listening on TCP address 127\.0\.0\.1:(\d+)")
AGENTS = ("kimi", "hermes", "grok")
INSTANT = {"default_turn": ["reply text=ok"]}


def _die_with_parent() -> None:
    """A killed benchmark must not leave a server (and its agent CLIs) running: PR_SET_PDEATHSIG."""
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


def wait_until(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise RuntimeError(f"timed out after {timeout}s waiting for {what}")


def settle(pid: int, quiet: float = 0.05, window: float = 0.5, bound: float = 10.0) -> None:
    """Wait (bounded) until a started server has stopped using CPU (sessions, schedulers), so the
    first figures do not pay for its start."""
    from bench.memory import cpu_seconds

    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        before = cpu_seconds(pid)
        time.sleep(window)
        if cpu_seconds(pid) - before <= quiet:
            return


class BenchServer:
    def __init__(
        self,
        workdir: Path,
        *,
        storage_url: str | None = None,
        app: str = "groupx_site.asgi:application",
        access_log: bool = True,
    ):
        self.app = app  # bench/post_profiled.py wraps it to switch cProfile on and off
        # daphne's command line logs every request (verbosity 1, which also prints the bound port);
        # `groupx start` logs none. False: verbosity 0 on a port chosen here, as GroupX serves.
        self.access_log = access_log
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config_path = workdir / "groupx.json"
        self.log_path = workdir / "server.log"
        self.db_path = workdir / ".groupx" / "groupx.db"
        agents = {}
        for name in AGENTS:
            cwd = workdir / f"cwd-{name}"
            cwd.mkdir(exist_ok=True)
            (cwd / ".groupx-fake.json").write_text(json.dumps(INSTANT))
            agents[name] = {"command": str(FAKES_BIN / name), "cwd": str(cwd)}
        config = {"server": {"host": "127.0.0.1", "port": 4310}, "agents": agents}
        if storage_url:  # bench/postgresql.py: the same room on PostgreSQL (docs/DECISIONS.md D53)
            config["storage"] = {"url": storage_url}
        self.config_path.write_text(json.dumps(config))
        env = {k: v for k, v in os.environ.items() if not k.startswith("GROUPX_")}  # no stray config/log dir
        self.env = {
            **env,
            "GROUPX_CONFIG": str(self.config_path),
            "GROUPX_FAKE_TIME_SCALE": "0",
            "GROUPX_FAKE_STATE_DIR": str(workdir / "fake-state"),
            "PYTHONUNBUFFERED": "1",
        }
        self.proc: subprocess.Popen | None = None
        self.base_url = ""

    def migrate(self) -> None:
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
            cwd=REPO,
            env=self.env,
            check=True,
            timeout=120,
        )

    def start(self, timeout: float = 60.0) -> BenchServer:
        self.migrate()
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        fixed_port = None if self.access_log else free_port()
        where = ["-p", "0"] if fixed_port is None else ["-p", str(fixed_port), "-v", "0"]
        with open(self.log_path, "ab") as log:  # the child keeps its own copy of the descriptor
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "daphne", "-b", "127.0.0.1", *where, self.app],
                cwd=REPO,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )

        def port():
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}; see {self.log_path}")
            if fixed_port is not None:
                return fixed_port  # the agents' readiness below waits for it to answer
            match = LISTENING.search(self.log_path.read_bytes()[offset:].decode(errors="replace"))
            return match and int(match.group(1))

        self.base_url = f"http://127.0.0.1:{wait_until(port, timeout, 'the server to listen')}"
        wait_until(self._agents_ready, timeout, "all three agents ready")  # startup is not part of any figure
        settle(self.proc.pid)
        return self

    def _agents_ready(self) -> bool:
        try:
            health = httpx.get(f"{self.base_url}/api/health", timeout=2).json()
        except (httpx.HTTPError, ValueError):
            return False
        agents = health.get("agents", [])
        return (
            health.get("readiness") == "ready"
            and len(agents) == len(AGENTS)
            and all(a.get("status") == "ready" for a in agents)
        )

    def stop(self, timeout: float = 20.0) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def seed_events(self, total: int) -> int:
        """Top the log up to ``total`` rows with plain INSERTs while the server is stopped (like
        tests/test_bootstrap_and_health.py): 100,000 events through the API would take minutes."""
        import sqlite3

        assert self.proc is None or self.proc.poll() is not None, "seed only a stopped server"
        db = sqlite3.connect(self.db_path)
        try:
            have = db.execute("SELECT COUNT(*) FROM rooms_event").fetchone()[0]
            now = datetime.now(UTC).isoformat()
            body = json.dumps({"content": "seeded history line for the benchmark " * 3})
            rows = (
                (
                    f"evt_bench{have + i}",
                    "room:main",
                    "message.created",
                    "user:web",
                    "user",
                    "You",
                    "[]",
                    f"corr_b{have + i}",
                    f"corr_b{have + i}",
                    now,
                    body,
                )
                for i in range(max(0, total - have))
            )
            db.executemany(
                "INSERT INTO rooms_event (event_id, room_id, event_type, actor_id, actor_kind, actor_display_name,"
                " targets, correlation_id, root_correlation_id, occurred_at, body) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                rows,
            )
            db.commit()
            return db.execute("SELECT COUNT(*) FROM rooms_event").fetchone()[0]
        finally:
            db.close()

    def durable_seqs(self, through: int) -> list[int]:
        """The authoritative seq list, read-only from SQLite: what every SSE client must have got."""
        import sqlite3

        db = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True)
        try:
            return [row[0] for row in db.execute("SELECT seq FROM rooms_event WHERE seq <= ? ORDER BY seq", (through,))]
        finally:
            db.close()

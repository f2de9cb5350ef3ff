"""Fixtures' building blocks for the real-CLI tier: the mock model process, per-agent scratch homes
and wrapper scripts, and room-level helpers.

Each real agent gets its own wrapper script (set as its ``command`` in groupx.json). The wrapper
gives the CLI a scratch HOME (and CODEX_HOME), points it at the mock model and execs the cached
binary, through ``wiretap.py`` (which records the stdio wire), with whatever argv GroupX's driver
passes. GroupX itself sets nothing in the CLI's environment: anything a CLI needs (IS_SANDBOX=1
for Claude Code as root included) is the operator's choice, made here in the wrapper.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import httpx

from tests.agents import send, wait_terminal
from tests.realcli import install
from tests.server import GroupXServer, wait_until
from tests.sse import SseClient

HERE = Path(__file__).resolve().parent
# Variables from the developer's own setup that would steer a CLI away from the mock.
FOREIGN_VARS = (
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
    "CLAUDE_CONFIG_DIR",
    "CLAUDECODE",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENROUTER_API_KEY",
    "CODEX_HOME",
    "HERMES_HOME",
    "KIMI_SHARE_DIR",
    "IS_SANDBOX",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
)
DRIVERS = ("codex", "claude", "hermes")


# ---- the mock model ---------------------------------------------------------------------------------


class MockModel:
    """``tests/realcli/mock_model.py`` in a subprocess on 127.0.0.1:0, scripted over HTTP."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.log_path = workdir / "mock-requests.jsonl"
        self.proc: subprocess.Popen | None = None
        self.port = 0

    def start(self) -> MockModel:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "mock_model.py"), "--log", str(self.log_path)],
            stdout=subprocess.PIPE,
            stderr=open(self.workdir / "mock.stderr", "ab"),  # noqa: SIM115
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # the first line names the port; it comes before serving
        if "listening on 127.0.0.1:" not in line:
            raise AssertionError(f"mock model did not start: {line!r}")
        self.port = int(line.rsplit(":", 1)[1])
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def script(self, *rules: dict) -> None:
        response = httpx.post(f"{self.url}/_mock/rules", json={"rules": list(rules)}, timeout=5)
        assert response.status_code == 200, response.text

    def requests(self, *, rule: str | None = None, api: str | None = None) -> list[dict]:
        if not self.log_path.exists():
            return []
        records = [json.loads(line) for line in self.log_path.read_text().splitlines() if line.strip()]
        return [r for r in records if (rule is None or r.get("rule") == rule) and (api is None or r.get("api") == api)]


# ---- per-agent homes and wrappers --------------------------------------------------------------------


@dataclass
class RealAgent:
    agent_id: str
    driver: str
    wrapper: Path
    home: Path
    cwd: Path
    env: dict[str, str] = field(default_factory=dict)

    def inherited(self) -> list[str]:
        """One line per launch: IS_SANDBOX as the wrapper inherited it from GroupX."""
        path = self.wrapper.with_suffix(".inherited")
        return path.read_text().splitlines() if path.exists() else []

    def launches(self) -> list[list[dict]]:
        """The wiretap's record of every launch of this agent's CLI, oldest first (see wiretap.py)."""
        directory = self.wrapper.with_suffix(".wire")
        files = (
            sorted(directory.glob("*.jsonl"), key=lambda p: float(p.name.split("-")[0])) if directory.exists() else []
        )
        return [[json.loads(line) for line in f.read_text().splitlines() if line.strip()] for f in files]

    def entry(self) -> dict:
        return {
            "driver": self.driver,
            "command": str(self.wrapper),
            "cwd": str(self.cwd),
            "identity": f"You are {self.agent_id}, a GroupX conformance-test agent.",
        }


def _write_wrapper(path: Path, binary: Path, env: dict[str, str]) -> None:
    inherited = path.with_suffix(".inherited")
    lines = [
        "#!/bin/sh",
        "# GroupX real-CLI tier: a scratch home pointed at the mock model, then the real CLI.",
        # what GroupX itself put in the environment, before this wrapper changes anything
        f'echo "IS_SANDBOX=${{IS_SANDBOX-<unset>}}" >> {shlex.quote(str(inherited))}',
        "unset " + " ".join(FOREIGN_VARS),
    ]
    lines += [f"export {key}={shlex.quote(value)}" for key, value in env.items()]
    tap = [sys.executable, str(HERE / "wiretap.py"), "--log", str(path.with_suffix(".wire")), "--"]
    lines.append(f'exec {shlex.join(tap)} {shlex.quote(str(binary))} "$@"')
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o755)


def _codex_config(mock: MockModel) -> str:
    return f"""model = "mock-model"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.mock]
name = "GroupX mock"
base_url = "{mock.url}/v1"
wire_api = "responses"
env_key = "MOCK_API_KEY"
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 30000

[analytics]
enabled = false
"""


def _hermes_config(mock: MockModel) -> str:
    return f"""model:
  provider: custom
  default: mock-model
  base_url: {mock.url}/v1
  api_key: groupx-mock
  context_length: 256000
security:
  allow_lazy_installs: false  # never pip-install at test time (NATIVE_PROTOCOLS §3.9, A4)
"""


def _kimi_config(mock: MockModel) -> str:
    return f"""default_model = "mock"
default_yolo = true

[providers.mock]
type = "openai_legacy"
base_url = "{mock.url}/v1"
api_key = "groupx-mock"

[models.mock]
provider = "mock"
model = "mock-model"
max_context_size = 128000
"""


def make_agent(root: Path, agent_id: str, driver: str, mock: MockModel, *, sandbox: bool = True) -> RealAgent:
    """A scratch home, config and wrapper for one real agent under ``root``."""
    cli = install.clis()[driver]
    home = root / f"home-{agent_id}"
    cwd = root / f"cwd-{agent_id}"
    for path in (home, cwd):
        path.mkdir(parents=True, exist_ok=True)
    env = {"HOME": str(home), "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    if driver == "codex":
        codex_home = home / ".codex"
        codex_home.mkdir(exist_ok=True)
        (codex_home / "config.toml").write_text(_codex_config(mock))
        env |= {"CODEX_HOME": str(codex_home), "MOCK_API_KEY": "groupx-mock"}
    elif driver == "claude":
        env |= {
            "ANTHROPIC_BASE_URL": mock.url,
            "ANTHROPIC_API_KEY": "groupx-mock",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
        }
        if sandbox:
            env["IS_SANDBOX"] = "1"  # Claude Code refuses bypassPermissions as root without it (L1)
    elif driver == "hermes":
        env["HERMES_DISABLE_LAZY_INSTALLS"] = "1"
        (home / ".hermes").mkdir(exist_ok=True)
        (home / ".hermes" / "config.yaml").write_text(_hermes_config(mock))
    elif driver == "kimi":
        (home / ".kimi" / "credentials").mkdir(parents=True, exist_ok=True)
        (home / ".kimi" / "config.toml").write_text(_kimi_config(mock))
        # kimi acp refuses session/new without a Kimi Code token file, even for a custom provider.
        (home / ".kimi" / "credentials" / "kimi-code.json").write_text(
            json.dumps(
                {
                    "access_token": "groupx-mock",
                    "refresh_token": "groupx-mock",
                    "expires_at": 4102444800,
                    "scope": "",
                    "token_type": "Bearer",
                    "expires_in": 0,
                }
            )
        )
    else:
        raise ValueError(driver)
    wrapper = root / f"{agent_id}.sh"
    _write_wrapper(wrapper, cli.binary, env)
    return RealAgent(agent_id, driver, wrapper, home, cwd, env)


def room_config(agents: list[RealAgent], **timeouts: int) -> dict:
    return {
        "server": {"host": "127.0.0.1", "port": 4310},
        "timeouts": {"handshakeMs": 60_000, "closeMs": 3_000, "cancelMs": 15_000, **timeouts},
        "agents": {a.agent_id: a.entry() for a in agents},
    }


def start_room(
    workdir: Path, agents: list[RealAgent], *, ready_timeout: float = 120.0, **timeouts: int
) -> GroupXServer:
    server = GroupXServer(workdir, room_config(agents, **timeouts))
    server.start(timeout=60)
    wait_agents_ready(server, [a.agent_id for a in agents], timeout=ready_timeout)
    return server


def health_agents(server: GroupXServer) -> dict[str, dict]:
    body = server.get("/api/health").json()
    return {entry["actorId"]: entry for entry in body.get("agents", [])}


def wait_agents_ready(server: GroupXServer, agent_ids: list[str], *, timeout: float = 120.0) -> dict[str, dict]:
    wanted = {f"agent:{a}" for a in agent_ids}

    def ready():
        agents = health_agents(server)
        failed = {
            k: v for k, v in agents.items() if k in wanted and v.get("status") in ("failed", "native_policy_blocked")
        }
        if failed:
            raise AssertionError(f"agents failed to start: {json.dumps(failed)}\n{server.log()[-4000:]}")
        return agents if all(agents.get(a, {}).get("status") == "ready" for a in wanted) else None

    return wait_until(ready, timeout=timeout, interval=0.25, message=f"agents {sorted(wanted)} ready")


# ---- turns, timed over SSE ---------------------------------------------------------------------------

TERMINALS = ("turn.completed", "turn.failed", "turn.cancelled", "turn.interrupted")
RESULTS: list[dict] = []  # one entry per measured turn, printed at the end of the session
REPORT = os.environ.get("GROUPX_REALCLI_REPORT")  # optional JSONL copy of RESULTS


def record(scenario: str, driver: str, **fields) -> None:
    entry = {"scenario": scenario, "driver": driver, "version": install.clis()[driver].version, **fields}
    RESULTS.append(entry)
    if REPORT:
        with open(REPORT, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")


def seconds_of(stamp: str) -> float:
    """An event's ``occurredAt`` as a POSIX timestamp."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


class TimedSse(SseClient):
    """An SSE client that stamps every frame with its arrival time (time.monotonic())."""

    def __init__(self, *args, **kwargs):
        self.timeline: list[tuple[float, dict]] = []
        super().__init__(*args, **kwargs)

    def _deliver(self, frame: dict) -> None:
        self.timeline.append((time.monotonic(), json.loads(frame["data"])))
        super()._deliver(frame)

    def of_turn(self, turn_id: str, event_type: str) -> list[tuple[float, dict]]:
        return [
            (t, e) for t, e in list(self.timeline) if e["type"] == event_type and e["body"].get("turnId") == turn_id
        ]


@dataclass
class TurnRun:
    turn_id: str
    accepted: dict
    terminal: dict
    posted_at: float
    ended_at: float
    deltas: list[dict]
    reasoning: list[dict]
    tools: list[dict]
    first_delta_at: float | None

    @property
    def latency(self) -> float:
        return self.ended_at - self.posted_at

    @property
    def first_delta(self) -> float | None:
        return None if self.first_delta_at is None else self.first_delta_at - self.posted_at


@dataclass
class Room:
    server: GroupXServer
    mock: MockModel
    agents: dict[str, RealAgent]

    def head(self) -> int:
        return self.server.get("/api/bootstrap").json()["room"]["throughSeq"]

    def stream(self) -> TimedSse:
        """An SSE stream that is already subscribed: transient deltas are never replayed, so the
        message must not be posted before the server's ``: open`` comment has arrived."""
        sse = TimedSse(self.server.base_url, after_seq=self.head())
        wait_until(lambda: sse.comments, timeout=15, message="the SSE stream to open")
        return sse

    def turn(self, to: str, content: str, *, timeout: float = 90.0, on_started=None, **extra) -> TurnRun:
        """POST a message to one agent and follow its Turn over SSE to the terminal event.
        ``on_started(sse, turn_id)`` runs right after the POST (a cancel test cancels from there)."""
        sse = self.stream()
        try:
            posted_at = time.monotonic()
            accepted = send(self.server, to, content, **extra)
            turn_id = accepted["turns"][0]["turnId"]
            if on_started is not None:
                on_started(sse, turn_id)
            terminal = sse.wait_for(
                lambda e: e.get("seq") is not None and e["type"] in TERMINALS and e["body"].get("turnId") == turn_id,
                timeout=timeout,
                message=f"the terminal event of {turn_id}",
            )
            ended_at = next(t for t, e in sse.timeline if e.get("eventId") == terminal["eventId"])
            deltas = sse.of_turn(turn_id, "turn.content.delta")
            if os.environ.get("GROUPX_REALCLI_DEBUG"):  # the Turn's SSE timeline, for a person
                for t, e in sse.timeline:
                    print(
                        f"{t - posted_at:7.3f} {e.get('seq')} {e['type']} {e.get('occurredAt')} {e['body'].get('turnId')}"
                    )
            return TurnRun(
                turn_id,
                accepted,
                terminal,
                posted_at,
                ended_at,
                [e for _, e in deltas],
                [e for _, e in sse.of_turn(turn_id, "turn.reasoning.delta")],
                [e for _, e in sse.of_turn(turn_id, "tool.progress")],
                deltas[0][0] if deltas else None,
            )
        finally:
            sse.close()

    def turn_of(self, turn_id: str, *, timeout: float = 60.0) -> dict:
        """The terminal event of a Turn this test did not post (polled from the durable log)."""
        return wait_terminal(self.server, turn_id, timeout=timeout)

    def event(self, event_id: str) -> dict:
        return next(e for e in self.server.events() if e["eventId"] == event_id)

"""The ``groupx.json`` schema (FEATURES §2.1), its loader and its writer.

Every level is strict: an unknown key is an error that names the key. ``transport: "direct"`` is
refused here, before settings open the database or the runtime starts any process.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import parse_qsl, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from groupx_site.core.driver_table import DEFAULT_AGENT_IDS, DISPLAY_NAMES, DRIVER_NAMES
from groupx_site.core.ssh_destination import DESTINATION_RE
from groupx_site.speedups import switches as speedups_switches

# The driver names, their display names and the default roster come from the driver table.
DRIVERS = DRIVER_NAMES
DriverName = Literal[DRIVER_NAMES]  # a Literal of every name, in the table's order (for messages)
RESERVED_AGENT_IDS = ("assistant", "__assistant__")
# The roster's size: the spec sets none. Each agent is a CLI process with its session, lane and
# health; 200 start together with health answering throughout, and 256 leaves room above that
# (docs/DECISIONS.md D92).
MAX_AGENTS = 256
AGENT_ID_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,62}[A-Za-z0-9])?$")
MESSAGE_CHARACTERS = 131_072
INTERPRETER_RE = re.compile(r"^(python(3(\.\d+)?)?|node(js)?)$")
SCRIPT_SUFFIXES = (".py", ".js", ".mjs", ".cjs")

# An old generated default is upgraded only when the stored value equals it exactly.
LEGACY_DEFAULTS = {
    ("limits", "contextCharacters"): (48_000, 256_000),
    ("limits", "messageCharacters"): (32_768, 131_072),
    ("limits", "rootTurns"): (24, 48),
    ("limits", "hopCount"): (12, 24),
    ("limits", "actorCallsPerRoot"): (8, 16),
    ("limits", "sseBytes"): (524_288, 2_097_152),
    ("timeouts", "firstEventMs"): (90_000, 180_000),
    ("timeouts", "idleMs"): (120_000, 300_000),
}


class ConfigError(Exception):
    """groupx.json is missing, unreadable or invalid. The message names the offending key."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)


class ServerConfig(Strict):
    host: Literal["127.0.0.1"] = "127.0.0.1"
    port: Annotated[int, Field(ge=1, le=65535)] = 4310
    # The server's threads share one CPU, which the GIL makes them take turns on anyway; the
    # agents' CLIs are not pinned (groupx_site/speedups/one_cpu.py, docs/DECISIONS.md D83).
    threadsOnOneCpu: bool = True  # an alias of speedups.threadsOnOneCpu (false wins), kept for older files
    # The speed seam's switch (groupx_site/speedups/switches.py): true, false, or {name: bool}.
    speedups: bool | dict[str, bool] = True

    @field_validator("speedups")
    @classmethod
    def _known_speedups(cls, value: bool | dict[str, bool]) -> bool | dict[str, bool]:
        if isinstance(value, dict):
            speedups_switches.resolve(value)  # raises on an unknown name, which pydantic reports with the key
        return value

    def speedups_on(self) -> dict[str, bool]:
        """Every mechanism's switch as this file sets it (``server.threadsOnOneCpu`` included)."""
        return speedups_switches.resolve(self.speedups, self.threadsOnOneCpu)


class StorageConfig(Strict):
    """Where the room is stored: the SQLite file at ``path`` (the embedded default), or, when ``url``
    names one, a PostgreSQL database (docs/DECISIONS.md D53). ``path``'s folder still holds the
    room's private files (agent sessions) either way."""

    path: Annotated[str, Field(min_length=1)] = ".groupx/groupx.db"
    url: Annotated[str, Field(min_length=1, max_length=2_048)] | None = None

    @field_validator("url")
    @classmethod
    def _loopback_postgresql(cls, value: str | None) -> str | None:
        return None if value is None else check_postgresql_url(value)


def check_postgresql_url(url: str) -> str:
    """``postgresql://[user[:password]@]<loopback host>[:port]/dbname`` or, for a Unix socket,
    ``postgresql:///dbname?host=/socket/dir``: like Redis (D43), GroupX talks to no database beyond
    this machine, so any other host is a config error."""
    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        raise ValueError(
            "must be postgresql://127.0.0.1[:port]/dbname (loopback) or "
            "postgresql:///dbname?host=/socket/dir (a Unix socket)"
        )
    try:
        parts.port  # noqa: B018 (urlsplit raises on a port that is not a number in range)
    except ValueError:
        raise ValueError("the port must be a number from 1 to 65535") from None
    if not re.fullmatch(r"/[A-Za-z0-9_][A-Za-z0-9_-]{0,62}", parts.path):
        raise ValueError("the path must name the database, e.g. /groupx")
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    if set(query) - {"host", "sslmode", "application_name"}:
        raise ValueError("the only query parameters allowed are host, sslmode and application_name")
    socket_dir = query.get("host")
    if parts.hostname:
        if socket_dir is not None:
            raise ValueError("name either a host or ?host=/socket/dir, not both")
        if not _is_loopback(parts.hostname):
            raise ValueError(f"the host must be loopback (127.0.0.1, ::1 or localhost), not {parts.hostname!r}")
    elif socket_dir is None or not socket_dir.startswith("/"):
        raise ValueError("without a host, ?host= must name the socket directory, an absolute path")
    return url


def check_redis_url(url: str) -> str:
    """``redis://<loopback host>[:port][/db]`` or ``unix:///absolute/path[?db=N]``: GroupX talks to
    nothing beyond this machine (docs/DECISIONS.md D43), so a remote Redis is a config error."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        if parts.netloc or not parts.path.startswith("/"):
            raise ValueError("a unix socket URL must be unix:///absolute/path")
        return url
    if parts.scheme != "redis":
        raise ValueError("must be redis://127.0.0.1[:port][/db] (loopback) or unix:///path/to/redis.sock")
    try:
        port = parts.port  # urlsplit raises on a port that is not a number in range
    except ValueError:
        raise ValueError("the port must be a number from 1 to 65535") from None
    if port == 0:
        raise ValueError("the port must be a number from 1 to 65535")
    if not _is_loopback(parts.hostname or ""):
        raise ValueError(f"the host must be loopback (127.0.0.1, ::1 or localhost), not {parts.hostname or '(none)'!r}")
    if parts.path not in ("", "/") and not re.fullmatch(r"/[0-9]{1,2}", parts.path):
        raise ValueError("the path must be a database number, e.g. /0")
    return url


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ChannelLayerConfig(Strict):
    """The channel layer between GroupX's processes (split mode, docs/DECISIONS.md D43). Absent,
    everything runs in one process on Channels' in-memory layer."""

    redisUrl: Annotated[str, Field(min_length=1, max_length=2_048)]

    @field_validator("redisUrl")
    @classmethod
    def _loopback_only(cls, url: str) -> str:
        return check_redis_url(url)


class CommandSpec(Strict):
    executable: Annotated[str, Field(min_length=1)]
    prefixArgs: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_interpreter_plus_one_script(self) -> CommandSpec:
        if not self.prefixArgs:
            return self
        if len(self.prefixArgs) != 1:
            raise ValueError("prefixArgs may hold at most one script path")
        if not INTERPRETER_RE.match(Path(self.executable).name):
            raise ValueError("prefixArgs are allowed only when the executable is a Python or Node interpreter")
        script = self.prefixArgs[0]
        if script.startswith("-") or not script.endswith(SCRIPT_SUFFIXES):
            raise ValueError("prefixArgs[0] must be a .py/.js/.mjs/.cjs script, not a flag")
        return self


def check_script_here(command: str | CommandSpec | None) -> None:
    """A script run by a local interpreter must exist on this machine (a remote agent's is on its
    host: `groupx doctor` runs it there, D51)."""
    if isinstance(command, CommandSpec) and command.prefixArgs and not Path(command.prefixArgs[0]).is_file():
        raise ValueError(f"command.prefixArgs[0] does not exist: {command.prefixArgs[0]}")


class AgentConfig(Strict):
    driver: DriverName | None = None
    name: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    identity: Annotated[str, Field(max_length=32_768)] = ""
    command: Annotated[str, Field(min_length=1)] | CommandSpec | None = None
    cwd: Annotated[str, Field(min_length=1)]
    enabled: bool = True
    # Another machine's agent (docs/DECISIONS.md D51): ``user@host`` or an ssh config alias; ``cwd``
    # is then an absolute path on that machine.
    ssh: Annotated[str, Field(min_length=1, max_length=320)] | None = None

    @field_validator("ssh")
    @classmethod
    def _ssh_destination(cls, destination: str | None) -> str | None:
        if destination is not None and not DESTINATION_RE.match(destination):
            raise ValueError(
                f"{destination!r} is not an ssh destination: write user@host or a Host alias of your "
                "ssh config (no ssh://, no port, no spaces, not starting with '-'; put ports and jump "
                "hosts in the ssh config)"
            )
        return destination

    @model_validator(mode="after")
    def _local_script_or_remote_cwd(self) -> AgentConfig:
        if self.ssh is None:
            check_script_here(self.command)
        elif not self.cwd.startswith("/"):
            raise ValueError(
                f"cwd must be an absolute path on {self.ssh} when ssh is set (it is not resolved "
                f"against this machine), not {self.cwd!r}"
            )
        return self


class AssistantBrain(Strict):
    driver: DriverName
    command: Annotated[str, Field(min_length=1)] | CommandSpec | None = None
    cwd: Annotated[str, Field(min_length=1)]

    @model_validator(mode="after")
    def _local_script(self) -> AssistantBrain:
        check_script_here(self.command)
        return self


class AssistantConfig(Strict):
    enabled: bool = False
    name: Annotated[str, Field(min_length=1, max_length=64)] = "房间助理"
    brain: AssistantBrain | None = None
    extraInstructions: Annotated[str, Field(max_length=32_768)] = ""


class LimitsConfig(Strict):
    messageCharacters: Literal[MESSAGE_CHARACTERS] = MESSAGE_CHARACTERS
    queuePerAgent: Annotated[int, Field(ge=1, le=10_000)] = 64
    rootTurns: Annotated[int, Field(ge=1, le=1_000)] = 48
    hopCount: Annotated[int, Field(ge=1, le=1_000)] = 24
    actorCallsPerRoot: Annotated[int, Field(ge=1, le=1_000)] = 16
    steersPerSubjectTurn: Annotated[int, Field(ge=1, le=16)] = 3
    contextCharacters: Annotated[int, Field(ge=1_024, le=10_000_000)] = 256_000
    sseEvents: Annotated[int, Field(ge=8, le=100_000)] = 512
    sseBytes: Annotated[int, Field(ge=16_384, le=100_000_000)] = 2_097_152


def _ms(default: int) -> Any:
    return Field(default=default, ge=1, le=86_400_000)


class TimeoutsConfig(Strict):
    handshakeMs: int = _ms(15_000)
    requestMs: int = _ms(10_000)
    firstEventMs: int = _ms(180_000)
    idleMs: int = _ms(300_000)
    cancelMs: int = _ms(10_000)
    closeMs: int = _ms(5_000)
    askMs: int = _ms(120_000)
    watchMs: int = _ms(120_000)


class GroupXConfig(Strict):
    # Django's settings object asks every value it hands out for ``_mask_wrapped`` (LazyObject); a
    # pydantic model answers a missing private name by raising inside its ``__getattr__``, ~3.5 µs on
    # every ``settings.GROUPX_CONFIG`` (several per Turn). Found on the class, it costs nothing, and
    # True is what Django assumes when the name is missing (docs/DECISIONS.md D64).
    _mask_wrapped: ClassVar[bool] = True

    transport: Literal["structured"] = "structured"
    server: ServerConfig = Field(default_factory=ServerConfig)
    storage: StorageConfig = Field(default_factory=StorageConfig)
    agents: dict[str, AgentConfig] | None = None
    assistant: AssistantConfig | None = None
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    timeouts: TimeoutsConfig = Field(default_factory=TimeoutsConfig)
    channelLayer: ChannelLayerConfig | None = None

    @field_validator("transport", mode="before")
    @classmethod
    def _direct_is_deprecated(cls, value: Any) -> Any:
        if value == "direct":
            raise ValueError('"direct" transport is deprecated and disabled; use "structured"')
        return value

    @field_validator("agents")
    @classmethod
    def _agent_ids(cls, agents: dict[str, AgentConfig] | None) -> dict[str, AgentConfig] | None:
        if agents is None:
            return None
        if not agents:
            raise ValueError("at least one agent is required")
        if len(agents) > MAX_AGENTS:
            raise ValueError(f"{len(agents)} agents are configured; a room holds at most {MAX_AGENTS}")
        for agent_id, agent in agents.items():
            if agent_id in RESERVED_AGENT_IDS:
                raise ValueError(f"agent id {agent_id!r} is reserved")
            if not AGENT_ID_RE.match(agent_id):
                raise ValueError(
                    f"agent id {agent_id!r} must start and end with a letter or digit and use only "
                    "A-Z a-z 0-9 . _ - (at most 64 characters)"
                )
            if agent.driver is None and agent_id not in DRIVERS:
                raise ValueError(f"agents.{agent_id}.driver is required (the id is not a built-in driver name)")
        return agents


class ResolvedAgent(BaseModel):
    """One roster entry with every default applied; what the runtime and the API use."""

    model_config = ConfigDict(frozen=True)

    agent_id: str
    actor_id: str
    driver: str
    display_name: str
    identity: str
    command: tuple[str, ...]  # executable [+ script], resolved against PATH at launch time
    cwd: str  # absolute; on the ssh destination when there is one
    enabled: bool
    ssh: str | None = None  # where the CLI runs (D51); None: on this machine

    @property
    def host(self) -> str:
        """Where the agent runs, as health and the room page show it."""
        return self.ssh or "local"


def _format_error(error: ValidationError) -> str:
    lines = []
    for issue in error.errors()[:20]:
        where = ".".join(str(part) for part in issue["loc"]) or "(top level)"
        if issue["type"] == "extra_forbidden":
            lines.append(f"{where}: unknown key")
        else:
            lines.append(f"{where}: {issue['msg']}")
    return "; ".join(lines)


def upgrade_legacy_defaults(raw: dict[str, Any]) -> dict[str, Any]:
    for (section, key), (old, new) in LEGACY_DEFAULTS.items():
        block = raw.get(section)
        if isinstance(block, dict) and type(block.get(key)) is int and block.get(key) == old:
            block[key] = new
    return raw


def parse_config(raw: Any, *, source: str = "groupx.json") -> GroupXConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: the top level must be a JSON object")
    try:
        return GroupXConfig.model_validate(upgrade_legacy_defaults(raw))
    except ValidationError as error:
        raise ConfigError(f"{source}: {_format_error(error)}") from None
    except RecursionError:
        raise ConfigError(f"{source}: a value is nested too deeply") from None


def load_config(path: str | os.PathLike[str]) -> GroupXConfig:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read ({error.strerror})") from None
    return parse_config(parse_json(text, source=str(path)), source=str(path))


def parse_json(text: str, *, source: str) -> Any:
    """The file's JSON, or one line that says what is wrong with it (docs/DECISIONS.md D101): a
    byte order mark is named as such (JSON forbids it; GroupX does not guess past it), and nesting
    too deep for the parser is a config error, not a ``RecursionError`` traceback."""
    if text.startswith("\ufeff"):
        raise ConfigError(f"{source}: starts with a UTF-8 byte order mark (BOM); save it as UTF-8 without a BOM")
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{source}: not valid JSON (line {error.lineno}, column {error.colno})") from None
    except RecursionError:
        raise ConfigError(f"{source}: not valid JSON (nested too deeply)") from None


def config_path_from_env(explicit: str | None = None) -> Path:
    """``--config`` wins, then ``GROUPX_CONFIG``, then ``./groupx.json``; always absolute."""
    chosen = explicit or os.environ.get("GROUPX_CONFIG") or "groupx.json"
    return Path(chosen).expanduser().resolve()


def storage_path(config: GroupXConfig, config_path: Path) -> Path:
    return (config_path.parent / config.storage.path).resolve()


def resolve_agents(config: GroupXConfig, config_path: Path) -> list[ResolvedAgent]:
    agents = config.agents
    if agents is None:
        agents = {agent_id: AgentConfig(cwd=".") for agent_id in DEFAULT_AGENT_IDS}
    resolved = []
    for agent_id, agent in agents.items():
        driver = agent.driver or agent_id
        command = command_argv(driver, agent.command)
        resolved.append(
            ResolvedAgent(
                agent_id=agent_id,
                actor_id=f"agent:{agent_id}",
                driver=driver,
                display_name=agent.name or DISPLAY_NAMES.get(agent_id, agent_id),
                identity=agent.identity,
                command=command,
                cwd=agent.cwd if agent.ssh else str((config_path.parent / agent.cwd).resolve()),
                enabled=agent.enabled,
                ssh=agent.ssh,
            )
        )
    return resolved


# The bundled demo agents' launchers, found through the installed package (a checkout or a wheel), and
# the form the starter config names them in (``groupx-demo:kimi``): resolved here each time the config
# is read, so a demo room survives a reinstall of GroupX elsewhere.
FAKES_BIN = Path(__file__).resolve().parent.parent / "agents" / "fakes" / "bin"
DEMO_COMMAND = "groupx-demo:"


def command_argv(driver: str, command: str | CommandSpec | None) -> tuple[str, ...]:
    """The configured command as an argv prefix: the driver's own name when none is given."""
    if command is None:
        return (driver,)
    if isinstance(command, str):
        if command.startswith(DEMO_COMMAND):
            return (str(FAKES_BIN / command.removeprefix(DEMO_COMMAND)),)
        return (command,)
    return (command.executable, *command.prefixArgs)


def ssh_config_file() -> str | None:
    """``GROUPX_SSH_CONFIG``: the ssh config GroupX's ssh reads instead of ``~/.ssh/config`` (D51)."""
    return os.environ.get("GROUPX_SSH_CONFIG") or None


def resolve_executable(command: tuple[str, ...]) -> tuple[str, ...] | None:
    """The argv prefix with the executable resolved on PATH; None when it is not an executable file."""
    executable = command[0]
    found = shutil.which(executable) if os.sep not in executable else executable
    if not found or not os.path.isfile(found) or not os.access(found, os.X_OK):
        return None
    return (os.path.abspath(found), *command[1:])


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def dump_config(config: GroupXConfig) -> dict[str, Any]:
    return config.model_dump(mode="json", exclude_none=True)


def write_config(path: Path, raw: dict[str, Any]) -> None:
    """Validate, then write atomically (a crash never leaves half a file)."""
    parse_config(raw, source=str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    # A temporary file of its own for every write (not one per process): two writers, two first
    # starts or two saves on two threads, never write into or rename away each other's file.
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(json.dumps(raw, indent=2, ensure_ascii=False) + "\n")
        os.chmod(tmp, _mode_of(path))  # mkstemp's is 0600
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _mode_of(path: Path) -> int:
    """The file's own permissions when it exists (a save keeps them), else a plain file's."""
    try:
        return path.stat().st_mode & 0o777
    except FileNotFoundError:
        return 0o644

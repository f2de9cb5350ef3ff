"""``groupx doctor`` (FEATURES §2.2): what this machine can run, and what the config says.

The exit status answers "can GroupX drive a real agent CLI here?": 0 when at least one of the five
native CLIs resolves on PATH, 1 otherwise, and 1 as well when the config names a channel layer
(``channelLayer.redisUrl``, split mode, docs/DECISIONS.md D43) whose Redis does not answer, or an
agent's SSH destination (D51) that is unreachable or lacks the agent's CLI. The
bundled demo agents are listed but do not count: they make a working room for a first look, not a
working setup (the setup wizard offers them anyway).
"""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from setup_wizard.config import ConfigError, GroupXConfig, load_config, resolve_agents, resolve_executable
from setup_wizard.detect import demo_shims, detect_drivers
from setup_wizard.doctor_ssh import ssh_lines
from setup_wizard.starter import is_demo_roster


def package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


REDIS_TIMEOUT_SECONDS = 1.0  # per connect and per reply: doctor and `start --split` never hang


@dataclass(frozen=True)
class RedisProbe:
    reachable: bool
    detail: str  # the server's version, or why it did not answer


def probe_redis(url: str, timeout: float = REDIS_TIMEOUT_SECONDS) -> RedisProbe:
    """Connect to the channel layer's Redis, ask its version, and close; bounded by ``timeout``."""
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout, retry=None)
    try:
        version_found = client.info("server").get("redis_version", "unknown")
    except redis.RedisError as error:
        return RedisProbe(False, str(error) or type(error).__name__)
    finally:
        client.close()
    return RedisProbe(True, f"redis {version_found}")


def shown_url(url: str) -> str:
    """The URL without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def channel_layer_lines(config: GroupXConfig) -> tuple[list[str], bool]:
    """(the lines, whether the layer is usable)."""
    if config.channelLayer is None:
        return ["  channel layer: in memory (one process; set channelLayer.redisUrl for split mode)"], True
    url = config.channelLayer.redisUrl
    found = probe_redis(url)
    if found.reachable:
        return [f"  channel layer: {shown_url(url)} ({found.detail})"], True
    return [
        f"  channel layer: {shown_url(url)} is unreachable ({found.detail}); start redis-server there "
        "or fix channelLayer.redisUrl"
    ], False


def config_lines(path: Path) -> tuple[list[str], list[str]]:
    """What the config says, and what of it does not answer (its channel layer, its SSH destinations)."""
    if not path.exists():
        return [f"config: {path} (missing: `groupx start` runs the setup wizard)"], []
    try:
        config = load_config(path)
    except ConfigError as error:
        return [f"config: {path}", f"  parse error: {error}"], []
    agents = resolve_agents(config, path)
    lines = [
        f"config: {path}",
        f"  server: http://{config.server.host}:{config.server.port}",
        f"  agents: {len(agents)} ({sum(a.enabled for a in agents)} enabled)",
    ]
    for agent in agents:
        if agent.ssh:
            runnable = f"on {agent.ssh}, {agent.cwd}"
        else:
            runnable = "ok" if resolve_executable(agent.command) else "command not found"
        state = "enabled" if agent.enabled else "disabled"
        lines.append(f"    {agent.actor_id} [{agent.driver}, {state}]: {' '.join(agent.command)} ({runnable})")
    remote_lines, remote_usable = ssh_lines(agents)
    layer_lines, usable = channel_layer_lines(config)
    problems = ([] if usable else ["the channel layer's Redis does not answer"]) + (
        [] if remote_usable else ["an SSH destination or its CLI does not answer"]
    )
    return lines + remote_lines + layer_lines, problems


def demo_room(path: Path) -> bool:
    """The config runs only the bundled demo agents, as the starter file writes them."""
    try:
        config = load_config(path) if path.exists() else None
    except ConfigError:
        return False
    return config is not None and is_demo_roster(resolve_agents(config, path))


def interpreter_core() -> str:
    """Where this interpreter's core lives: a shared libpython build (pyenv's default) runs a
    GroupX Turn with ~15 % more CPU than one linked into its executable (Debian's python3), which
    `make` prefers when it builds .venv (tools/venv_python.sh, docs/DECISIONS.md D77)."""
    try:
        with open("/proc/self/maps") as maps:
            shared = sorted({line.split()[-1] for line in maps if "libpython" in line})
    except OSError:
        return "interpreter core: unknown (no /proc)"
    if shared:
        return f"interpreter core: shared {Path(shared[0]).name} (slower; see docs/DECISIONS.md D77)"
    return "interpreter core: linked into the executable"


def run(config_path: Path, out=None) -> int:
    out = out or sys.stdout
    drivers = detect_drivers()
    lines = [
        f"os: {platform.platform()}",
        f"python: {platform.python_version()} ({sys.executable}), {interpreter_core()}",
        f"django: {package_version('Django')}, daphne: {package_version('daphne')}",
        "agent CLIs:",
    ]
    for d in drivers:
        if d.found:
            lines.append(f"  {d.driver}: {d.command} ({d.version or 'no --version output'})")
        else:
            lines.append(f"  {d.driver}: not found on PATH")
    demos = demo_shims()
    if demos:
        lines.append(f"demo agents (bundled, not counted): {', '.join(demos)}")
    more, problems = config_lines(config_path)
    lines += more
    found = sum(d.found for d in drivers)
    if not found and demo_room(config_path):
        # The exit code stays FEATURES §2.2's (1 without an agent CLI); the line says why the room works.
        lines.append(
            f"this is the demo room: its bundled demo agents answer, but none of the {len(drivers)} "
            "agent CLIs is installed; install one, then change the agents at /setup"
        )
    lines.append(
        f"result: {found} of {len(drivers)} agent CLIs found"
        + ("" if found else " (need at least one)")
        + "".join(f"; {problem}" for problem in problems)
    )
    out.write("\n".join(lines) + "\n")
    out.flush()
    return 0 if found and not problems else 1

"""``groupx doctor`` (FEATURES §2.2): what this machine can run, and what the config says.

The exit status answers "can GroupX drive a real agent CLI here?": 0 when at least one of the five
native CLIs resolves on PATH, 1 otherwise. The bundled demo agents are listed but do not count: they
make a working room for a first look, not a working setup (the setup wizard offers them anyway).
"""

from __future__ import annotations

import platform
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from setup_wizard.config import ConfigError, load_config, resolve_agents, resolve_executable
from setup_wizard.detect import demo_shims, detect_drivers


def package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def config_lines(path: Path) -> list[str]:
    if not path.exists():
        return [f"config: {path} (missing: `groupx start` runs the setup wizard)"]
    try:
        config = load_config(path)
    except ConfigError as error:
        return [f"config: {path}", f"  parse error: {error}"]
    agents = resolve_agents(config, path)
    lines = [
        f"config: {path}",
        f"  server: http://{config.server.host}:{config.server.port}",
        f"  agents: {len(agents)} ({sum(a.enabled for a in agents)} enabled)",
    ]
    for agent in agents:
        runnable = "ok" if resolve_executable(agent.command) else "command not found"
        state = "enabled" if agent.enabled else "disabled"
        lines.append(f"    {agent.actor_id} [{agent.driver}, {state}]: {' '.join(agent.command)} ({runnable})")
    return lines


def run(config_path: Path, out=None) -> int:
    out = out or sys.stdout
    drivers = detect_drivers()
    lines = [
        f"os: {platform.platform()}",
        f"python: {platform.python_version()} ({sys.executable})",
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
    lines += config_lines(config_path)
    found = sum(d.found for d in drivers)
    lines.append(f"result: {found} of {len(drivers)} agent CLIs found" + ("" if found else " (need at least one)"))
    out.write("\n".join(lines) + "\n")
    out.flush()
    return 0 if found else 1

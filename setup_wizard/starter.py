"""The starter ``groupx.json`` written on first run (``groupx start``, ``make run``, ``runserver``).

Real CLIs found on PATH are used first; when none is installed the room is populated with the
bundled demo agents (the fake CLIs in ``agents/fakes``), clearly named as demos, so a newcomer gets a
working room straight away and changes it later at ``/setup`` (docs/DECISIONS.md D26).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from groupx_site.core.driver_table import DEMO_DRIVERS
from setup_wizard.config import DEMO_COMMAND, DISPLAY_NAMES, DRIVERS, FAKES_BIN, write_config

DEFAULT_PORT = 4310


def detect_drivers() -> dict[str, str | None]:
    """driver name → the absolute path of a real CLI on PATH (None when missing)."""
    return {driver: shutil.which(driver) for driver in DRIVERS}


def demo_agents(workdir: Path) -> dict[str, Any]:
    agents: dict[str, Any] = {}
    for driver in DEMO_DRIVERS:
        shim = FAKES_BIN / driver
        if not shim.is_file():
            continue
        agents[f"demo-{driver}"] = {
            "driver": driver,
            "name": f"Demo {DISPLAY_NAMES[driver]}",
            "identity": f"A scripted demo agent speaking the real {DISPLAY_NAMES[driver]} wire protocol.",
            "command": f"{DEMO_COMMAND}{driver}",  # resolved at run time (setup_wizard/config.py)
            "cwd": str(workdir),
        }
    return agents


def demo_assistant(workdir: Path) -> dict[str, Any] | None:
    """The demo room's assistant (FEATURES §13): the fake Claude CLI scripted to ask every agent for
    a status through the operator tools and summarise the answers (``agents/fakes/bin/demo-assistant``)."""
    shim = FAKES_BIN / "demo-assistant"
    if not shim.is_file():
        return None
    brain = {"driver": "claude", "command": f"{DEMO_COMMAND}demo-assistant", "cwd": str(workdir)}
    return {"enabled": True, "name": "Demo assistant", "brain": brain}


def starter_config(config_path: Path, *, port: int = DEFAULT_PORT) -> dict[str, Any]:
    workdir = config_path.parent.resolve()
    found = {driver: path for driver, path in detect_drivers().items() if path}
    agents: dict[str, Any] = {driver: {"cwd": str(workdir)} for driver in found}
    # A first setup turns the room assistant on (FEATURES §2.3, PROTOCOL §10.6) whenever a CLI that
    # can be its brain is found: every driver can, so the first one found is.
    assistant = {"enabled": True, "brain": {"driver": next(iter(found)), "cwd": str(workdir)}} if found else None
    if not agents:
        agents = demo_agents(workdir)
        assistant = demo_assistant(workdir) if agents else None
    raw: dict[str, Any] = {"server": {"host": "127.0.0.1", "port": port}, "storage": {"path": ".groupx/groupx.db"}}
    if agents:  # with neither real CLIs nor demo shims, the built-in default roster applies
        raw["agents"] = agents
    if assistant:
        raw["assistant"] = assistant
    return raw


def write_starter_config(config_path: Path, *, port: int = DEFAULT_PORT) -> dict[str, Any]:
    raw = starter_config(config_path, port=port)
    write_config(config_path, raw)
    return raw


def describe(config_path: Path, raw: dict[str, Any]) -> str:
    """One line for the terminal: what was written, with which agents, and where to change them."""
    agents = ", ".join(f"agent:{agent_id}" for agent_id in raw.get("agents", {})) or "the default codex, grok, kimi"
    demos = all(agent_id.startswith("demo-") for agent_id in raw.get("agents", {"": None}))
    why = " (no agent CLI found on PATH: these are the bundled demo agents)" if demos else ""
    return f"No config found: wrote a starter {config_path} with {agents}{why}. Change the agents at /setup."


def is_demo_roster(agents) -> bool:
    """True when the room runs only the bundled demo agents, as the starter file writes them
    (``demo-*`` ids on the fake CLIs): the room then offers ``/setup`` in a banner. A test roster
    that runs the fakes under real driver names is not "the demo agents"."""
    enabled = [agent for agent in agents if agent.enabled]
    return bool(enabled) and all(
        agent.agent_id.startswith("demo-") and Path(agent.command[0]).parent == FAKES_BIN for agent in enabled
    )

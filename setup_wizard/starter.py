"""The starter ``groupx.json`` written on first run.

Real CLIs found on PATH are offered first; when none is installed the room is populated with the
bundled demo agents (the fake CLIs in ``agents/fakes``), clearly named as demos, so a newcomer gets a
working room straight away.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from setup_wizard.config import DISPLAY_NAMES, DRIVERS, write_config

FAKES_BIN = Path(__file__).resolve().parent.parent / "agents" / "fakes" / "bin"
DEMO_DRIVERS = ("kimi", "hermes", "grok", "codex", "claude")


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
            "command": str(shim),
            "cwd": str(workdir),
        }
    return agents


def starter_config(config_path: Path) -> dict[str, Any]:
    workdir = config_path.parent.resolve()
    found = {driver: path for driver, path in detect_drivers().items() if path}
    agents: dict[str, Any] = {driver: {"cwd": str(workdir)} for driver in found}
    if not agents:
        agents = demo_agents(workdir)
    raw: dict[str, Any] = {"server": {"host": "127.0.0.1", "port": 4310}, "storage": {"path": ".groupx/groupx.db"}}
    if agents:  # with neither real CLIs nor demo shims, the built-in default roster applies
        raw["agents"] = agents
    return raw


def write_starter_config(config_path: Path) -> dict[str, Any]:
    raw = starter_config(config_path)
    write_config(config_path, raw)
    return raw

"""Agents saved through ``/setup`` while this process runs, not yet started (FEATURES §2.3).

The live roster is the config the process started with; the file on disk may be newer. An agent
enabled in the file but not live is shown as ``pending_restart``: it counts toward the room's agent
total but is not a message target until ``groupx restart`` (docs/DECISIONS.md D9).
"""

from __future__ import annotations

import os
from collections.abc import Collection
from functools import lru_cache
from pathlib import Path
from typing import Any

from setup_wizard.config import ConfigError, GroupXConfig, load_config, resolve_agents


def _file_version(path: Path) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


@lru_cache(maxsize=4)
def _parsed(path: Path, version: tuple[int, int] | None) -> GroupXConfig | None:
    """Every bootstrap asks; the file changes only on a save, so parse once per version of it."""
    try:
        return load_config(path)
    except ConfigError:  # a file broken by hand after start: nothing is pending, the room stays as is
        return None


def pending_agents(config_path: Path, live_actor_ids: Collection[str]) -> list[dict[str, Any]]:
    config = _parsed(Path(config_path), _file_version(config_path))
    if config is None:
        return []
    return [
        {
            "actorId": agent.actor_id,
            "displayName": agent.display_name,
            "driver": agent.driver,
            "status": "pending_restart",
            "cwd": agent.cwd,
            "host": agent.host,
            "enabled": True,
        }
        for agent in resolve_agents(config, config_path)
        if agent.enabled and agent.actor_id not in live_actor_ids
    ]

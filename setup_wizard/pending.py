"""Agents saved through ``/setup`` while this process runs, not yet started (FEATURES §2.3).

The live roster is the config the process started with; the file on disk may be newer. An agent
enabled in the file but not live is shown as ``pending_restart``: it counts toward the room's agent
total but is not a message target until ``groupx restart`` (ARCHITECTURE "Decisions" 12).
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from setup_wizard.config import ConfigError, load_config, resolve_agents


def pending_agents(config_path: Path, live_actor_ids: Collection[str]) -> list[dict[str, Any]]:
    try:
        config = load_config(config_path)
    except ConfigError:  # a file broken by hand after start: nothing is pending, the room stays as is
        return []
    return [
        {"actorId": agent.actor_id, "displayName": agent.display_name, "driver": agent.driver,
         "status": "pending_restart", "cwd": agent.cwd, "enabled": True}
        for agent in resolve_agents(config, config_path)
        if agent.enabled and agent.actor_id not in live_actor_ids
    ]

"""Write a starter groupx.json when none exists, and load it into the running settings."""

from __future__ import annotations

from django.conf import settings

from setup_wizard import roster
from setup_wizard.config import load_config
from setup_wizard.starter import describe, write_starter_config


def ensure_config(out) -> bool:
    """Returns True when a starter file was written."""
    path = settings.GROUPX_CONFIG_PATH
    if path.exists():
        return False
    raw = write_starter_config(path)
    out.write(describe(path, raw) + "\n")
    settings.GROUPX_CONFIG = load_config(path)
    roster.configured_agents.cache_clear()
    return True

"""What every ``groupx`` command (``cli.py``, ``agent_cli.py``, ``split.py``) shares: how it speaks
(``say`` on stdout, ``fail`` on stderr with the exit status 1) and the room a config names
(``load_target``, which says why the config does not load instead)."""

from __future__ import annotations

import sys
from pathlib import Path

from groupx_site.port_probe import Target
from setup_wizard.config import ConfigError, load_config


def say(message: str) -> None:
    print(message, flush=True)


def fail(message: str) -> int:
    print(f"groupx: {message}", file=sys.stderr, flush=True)
    return 1


def load_target(path: Path) -> Target | None:
    try:
        return Target(path, load_config(path))
    except ConfigError as error:
        fail(str(error))
        return None

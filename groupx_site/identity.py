"""Runtime identity (PROTOCOL §10.6, FEATURES §16).

``runtimeKey`` changes whenever the config's content changes; ``runtimeScopeKey`` depends only on
the canonical config path, so ``groupx stop`` can still recognise its own instance after the roster
was edited. Neither is a secret, and neither is stored.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from setup_wizard.config import GroupXConfig, canonical_json, dump_config

SERVICE = "groupx"
PROTOCOL = "groupx.runtime/1"


def canonical_path(path: Path) -> str:
    return str(Path(path).resolve())


def runtime_scope_key(config_path: Path) -> str:
    return hashlib.sha256(canonical_json({"configPath": canonical_path(config_path)}).encode()).hexdigest()


def runtime_key(config: GroupXConfig, config_path: Path) -> str:
    document = {"configPath": canonical_path(config_path), "config": dump_config(config)}
    return hashlib.sha256(canonical_json(document).encode()).hexdigest()

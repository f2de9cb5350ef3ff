"""Runtime identity (PROTOCOL §10.6, FEATURES §16).

``runtimeKey`` changes whenever the config's content changes; ``runtimeScopeKey`` depends only on
the canonical config path, so ``groupx stop`` can still recognise its own instance after the roster
was edited. Neither is a secret, and neither is stored.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from setup_wizard.config import GroupXConfig, canonical_json, dump_config

SERVICE = "groupx"
PROTOCOL = "groupx.runtime/1"


@functools.cache
def product_version() -> str:
    """GroupX's release (``groupx --version``, health, bootstrap, the page): the installed
    distribution's, or in a checkout that was never installed, pyproject.toml's."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("groupx")
    except PackageNotFoundError:
        import tomllib

        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        return tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"]


def canonical_path(path: Path) -> str:
    return str(Path(path).resolve())


def runtime_scope_key(config_path: Path) -> str:
    return hashlib.sha256(canonical_json({"configPath": canonical_path(config_path)}).encode()).hexdigest()


def runtime_key(config: GroupXConfig, config_path: Path) -> str:
    document = {"configPath": canonical_path(config_path), "config": dump_config(config)}
    return hashlib.sha256(canonical_json(document).encode()).hexdigest()

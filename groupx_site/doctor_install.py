"""``groupx doctor``'s lines on this installation and the room's database: the version, a database
a newer GroupX wrote (migrations this code does not know, which ``groupx start`` refuses), and
another installed distribution that provides one of GroupX's top-level modules (``agents``,
``memory``, ...), which would shadow or be shadowed by ours outside an isolated tool environment."""

from __future__ import annotations

import os
import sqlite3
from importlib import metadata
from pathlib import Path

from groupx_site.runtime_identity import product_version
from setup_wizard.config import ConfigError, load_config, storage_path

TOP_LEVEL = ("groupx_site", "agents", "memory", "rooms", "turns", "assistant", "setup_wizard")


def install_lines(config_path: Path) -> tuple[list[str], list[str]]:
    """(lines, problems): what doctor prints, and what makes it exit non-zero."""
    lines = [f"groupx: {product_version()}"]
    clashes = module_clashes()
    for module, owners in clashes.items():
        lines.append(
            f"  warning: the module `{module}` is also provided by {', '.join(owners)}; install GroupX "
            "in an isolated tool environment (pipx or uv tool) so neither shadows the other"
        )
    store, problems = store_lines(config_path)
    return lines + store, problems


def module_clashes() -> dict[str, list[str]]:
    """Top-level module -> the other installed distributions that provide it."""
    found: dict[str, list[str]] = {}
    for module, owners in metadata.packages_distributions().items():
        if module in TOP_LEVEL:
            others = sorted({owner for owner in owners if owner.lower() != "groupx"})
            if others:
                found[module] = others
    return found


def store_lines(config_path: Path) -> tuple[list[str], list[str]]:
    try:
        config = load_config(config_path) if config_path.exists() else None
    except ConfigError:
        return [], []  # the config lines already say why
    if config is None or config.storage.url:
        return [], []  # PostgreSQL: the start itself refuses such a database
    database = Path(os.environ.get("GROUPX_DB") or storage_path(config, config_path))  # as settings.py
    if not database.exists():
        return [], []
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "groupx_site.settings")
    import django

    from groupx_site.store.store_integrity import NewerMigrations, unknown_migrations

    django.setup()
    db = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        unknown = unknown_migrations(db.cursor())
    except sqlite3.Error as error:
        return [f"database: {database} could not be read ({error})"], ["the database could not be read"]
    finally:
        db.close()
    if unknown:
        reason = str(NewerMigrations(unknown))
        return [f"database: {database}: {reason}"], ["the database was written by a newer GroupX"]
    return [f"database: {database} (its migrations are all known to this version)"], []

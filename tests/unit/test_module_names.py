"""No two product modules share a name where it would confuse (docs/ARCHITECTURE.md "The apps").

A name like ``runtime.py`` in three packages, or ``health.py`` importing another ``health.py``, makes
a reader and a traceback guess which one is meant. The names every app repeats by convention (its
models, admin, API, REST schemas, commands, fixed SQL, MCP server and tools) are allowed; any other
name is the project's only module of that name.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("groupx_site", "rooms", "memory", "turns", "agents", "setup_wizard", "assistant")
# Repeated on purpose: Django's and ninja's per-app files, each app's commands, SQL and MCP pieces, and
# ``base.py``, the module name a Django database backend must have (groupx_site/core/sqlite/).
CONVENTIONAL = {"__init__", "admin", "apps", "api", "models", "schemas", "actions", "sql", "server", "tools", "base"}


def product_modules() -> dict[str, list[str]]:
    by_name: dict[str, list[str]] = defaultdict(list)
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).parts
            if "migrations" in parts or "tests" in parts:
                continue
            by_name[path.stem].append("/".join(parts))
    return by_name


def test_no_two_product_modules_share_a_name_outside_the_conventional_ones():
    clashes = {
        name: sorted(paths) for name, paths in product_modules().items() if len(paths) > 1 and name not in CONVENTIONAL
    }
    assert clashes == {}


def test_the_check_sees_every_product_package():
    modules = product_modules()
    assert "groupx_site/store/db.py" in modules["db"]
    assert {path.split("/")[0] for paths in modules.values() for path in paths} == set(PACKAGES)

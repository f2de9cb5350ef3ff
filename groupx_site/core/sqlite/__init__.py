"""The SQLite backend GroupX runs on (``DATABASES["default"]["ENGINE"]``): Django's own, with one
piece of per-statement work done once per statement text instead (``base.py``; docs/DECISIONS.md D64).

This package imports nothing, so ``settings`` and the store checks can name the engine freely."""

ENGINE = "groupx_site.core.sqlite"

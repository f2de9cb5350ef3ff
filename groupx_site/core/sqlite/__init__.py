"""The SQLite backend GroupX runs on (``DATABASES["default"]["ENGINE"]``): Django's own, with the SQL
functions search needs (``functions.py``), and, while the ``sqliteShortcuts`` speedup is on, its
per-statement work done once per statement text instead (``groupx_site/speedups/sqlite/base.py``;
docs/DECISIONS.md D64).

This package imports nothing, so ``settings`` and the store checks can name the engine freely."""

ENGINE = "groupx_site.speedups.sqlite"

"""GroupX's SQLite backend (its name: ``groupx_site.core.sqlite.ENGINE``), in ``base.py``."""

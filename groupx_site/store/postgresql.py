"""PostgreSQL storage (docs/DECISIONS.md D53): Django's settings for a ``storage.url``, and what the
PostgreSQL-only migrations ask of the server.

The URL was checked when ``groupx.json`` was loaded (loopback host or a Unix socket directory,
``setup_wizard.config.check_postgresql_url``). Connections are kept for the life of their thread,
as on SQLite (the writer thread and the readers are long-lived, D20). ``lock_timeout`` plays the
part of SQLite's busy timeout: a lock another process holds longer than that is a store fault
(503 ``STORE_UNAVAILABLE``), not an endless wait.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlsplit

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.base.schema import BaseDatabaseSchemaEditor

if TYPE_CHECKING:  # psycopg is imported only on PostgreSQL
    from psycopg.abc import Buffer
    from psycopg.types.json import _JsonDumper


def postgresql_database(url: str, *, busy_timeout_ms: int) -> dict[str, Any]:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    options = {"options": f"-c lock_timeout={int(busy_timeout_ms)} -c timezone=UTC"}
    if "sslmode" in query:
        options["sslmode"] = query["sslmode"]
    options["application_name"] = query.get("application_name", "groupx")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": parts.path.lstrip("/"),
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": query.get("host") or parts.hostname or "",
        "PORT": str(parts.port or ""),
        "CONN_MAX_AGE": None,
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": options,
    }


def has_trigram_extension(schema_editor: BaseDatabaseSchemaEditor) -> bool:
    """Creates ``pg_trgm`` when the server has it (Debian's postgresql package does, in contrib) and
    says whether it is there: without it, text search still works, unindexed."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'")
        if cursor.fetchone() is None:
            return False
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    return True


# ---- NUL: SQLite stores it, PostgreSQL cannot ---------------------------------------------------

# A JSON ``\u0000`` escape not itself escaped (preceded by an even run of backslashes).
_JSON_NUL = re.compile(rb"(?<!\\)((?:\\\\)*)\\u0000")


def repair_nul_on_postgresql(sender: object, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    """PostgreSQL's text and jsonb cannot hold U+0000 (SQLite's can): a message, a memory or a CLI's
    output holding one would fail its write. On PostgreSQL every text and JSON parameter has each
    NUL replaced by U+FFFD, as a lone surrogate is repaired (groupx_site/core/text.py, D53): the
    write and any search for such a term go through, with the character shown as replaced."""
    if connection.vendor != "postgresql":
        return
    from psycopg.types.json import Jsonb, JsonbBinaryDumper, JsonbDumper
    from psycopg.types.string import StrBinaryDumper, StrDumperUnknown

    class NulSafeText(StrDumperUnknown):
        def dump(self, obj: str) -> Buffer | None:
            return super().dump(obj.replace("\x00", "\ufffd") if "\x00" in obj else obj)

    class NulSafeTextBinary(StrBinaryDumper):
        def dump(self, obj: str) -> Buffer | None:
            return super().dump(obj.replace("\x00", "\ufffd") if "\x00" in obj else obj)

    def nul_safe_json(base: type[_JsonDumper]) -> type[_JsonDumper]:
        class Dumper(base):  # type: ignore[valid-type,misc]  # a subclass of whichever dumper it is given
            def dump(self, obj: Any) -> bytes:
                data = bytes(super().dump(obj))
                return _JSON_NUL.sub(rb"\1\\ufffd", data) if b"\\u0000" in data else data

        return Dumper

    adapters = connection.connection.adapters
    adapters.register_dumper(str, NulSafeText)
    adapters.register_dumper(str, NulSafeTextBinary)
    adapters.register_dumper(Jsonb, nul_safe_json(JsonbDumper))
    adapters.register_dumper(Jsonb, nul_safe_json(JsonbBinaryDumper))

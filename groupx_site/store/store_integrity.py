"""What health says about the database file itself (FEATURES §16, §18; docs/DECISIONS.md D42).

- **Integrity**: SQLite's ``PRAGMA quick_check`` (the page, b-tree and record checks, without the
  index-against-table cross-check of ``integrity_check``: linear in the file, seconds for
  gigabytes). It runs once at start, before the migrations touch the file, and on demand
  (``GET /api/health?integrity=check``); health reports the last answer, or that a database call
  met a damaged page since. It reads on a connection of its own, in a transaction of its own, so
  nothing waits for it.
- **Schema version**: the protocol's storage schema version, recorded as a row of the
  ``schema_migrations`` table by the migration that made the schema (``groupx_site/migrations``).
  A database a newer GroupX wrote (a higher version) is refused at start.
- **Migrations**: a newer release may change the tables without changing the spec's schema version,
  so a database on which migrations this code does not know were applied (``django_migrations``
  rows with no migration file here) is refused at start too, before ``migrate`` writes anything.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.backends.utils import CursorWrapper
from django.utils import timezone

from groupx_site.core import sqlite
from groupx_site.store import store_faults

SCHEMA_VERSION = 9  # FEATURES §18: the storage schema these tables implement
MAX_REPORTED_PROBLEMS = 5  # quick_check may list up to 100; the first few say enough


@dataclass(frozen=True)
class Integrity:
    ok: bool
    checked_at: str
    problems: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"integrityOk": self.ok, "integrityCheckedAt": self.checked_at}
        if not self.ok:
            body["integrityProblems"] = list(self.problems)
        return body


_last: Integrity | None = None
_lock = threading.Lock()  # one check at a time; a caller that waited reuses nothing stale


def last() -> Integrity | None:
    """The last check's answer, or None before the first check has ended."""
    return _last


def check() -> Integrity | None:
    """Run ``quick_check`` now (one at a time) and remember the answer. None when a store fault
    (a file that cannot be opened, a disk I/O error, ...) kept the check from reading the file:
    that is not damage, and health reports the fault itself (D24); the last answer stays."""
    global _last
    if settings.DATABASES["default"]["ENGINE"] != sqlite.ENGINE:
        return None  # not applicable: PostgreSQL checks its own pages (integrityOk stays null, D53)
    with _lock:
        found = _quick_check(str(settings.DATABASES["default"]["NAME"]))
        if found is not None:
            _last = found
        return found


def note_if_damaged(error: BaseException) -> None:
    """A database call met a damaged page (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``): the file is not
    sound whatever the last check found, so health says so now. The request still fails as it
    did; the next check on demand replaces this answer."""
    global _last
    for candidate in (error, error.__cause__):
        name = getattr(candidate, "sqlite_errorname", None) or ""
        corrupt = getattr(candidate, "sqlstate", None) in ("XX001", "XX002")  # PostgreSQL's data/index_corrupted
        if corrupt or name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in str(candidate):
            _last = Integrity(
                False,
                timezone.now().isoformat(timespec="milliseconds"),
                (f"a database call met a damaged page: {candidate}",),
            )
            return


def check_at_start() -> None:
    """Once per process, before the migrations touch the file (a fresh store, which they create,
    is checked right after them): health then says whether the file was sound as we found it."""
    if _last is None:
        check()


def _quick_check(path: str) -> Integrity | None:
    now = timezone.now().isoformat(timespec="milliseconds")
    db = None
    try:
        # mode=ro: the check never creates or changes the file; a WAL database still reads its WAL.
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5, isolation_level=None)
        rows = db.execute(f"PRAGMA quick_check({MAX_REPORTED_PROBLEMS})").fetchall()
    except sqlite3.Error as error:
        if store_faults.classify(error) is not None:
            return None
        return Integrity(False, now, (str(error),))  # e.g. damage in the schema page stops the check
    finally:
        if db is not None:
            db.close()
    problems = tuple(str(row[0]) for row in rows)
    return Integrity(problems == ("ok",), now, () if problems == ("ok",) else problems)


def recorded_schema_version(cursor: CursorWrapper) -> int | None:
    """The highest version in ``schema_migrations``; None before the migration that records it."""
    try:
        version: int | None = cursor.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0]
        return version
    except Exception as error:  # noqa: BLE001 - "no such table" on a store not migrated yet
        if "no such table" in str(error):
            return None
        raise


class NewerSchema(Exception):
    """The database was written by a newer GroupX: this one must not write to it."""

    def __init__(self, found: int):
        super().__init__(
            f"the database has storage schema version {found}, newer than this GroupX's "
            f"{SCHEMA_VERSION}; start the GroupX that wrote it, or point storagePath elsewhere"
        )


def refuse_newer_schema(cursor: CursorWrapper) -> None:
    found = recorded_schema_version(cursor)
    if found is not None and found > SCHEMA_VERSION:
        raise NewerSchema(found)


class NewerMigrations(Exception):
    """Migrations this code does not know were applied to the database: a newer GroupX wrote it."""

    def __init__(self, unknown: list[str]):
        shown = ", ".join(unknown[:3]) + (f" and {len(unknown) - 3} more" if len(unknown) > 3 else "")
        super().__init__(
            f"the database was written by a newer GroupX (migrations this version does not know: "
            f"{shown}); nothing was written to it. Start the GroupX that wrote it, or point "
            "storagePath elsewhere"
        )


def unknown_migrations(cursor: CursorWrapper) -> list[str]:
    """``app.name`` of every applied migration with no migration file in this code; [] on a new store."""
    from django.db.migrations.loader import MigrationLoader

    try:
        applied = cursor.execute("SELECT app, name FROM django_migrations").fetchall()
    except Exception as error:  # noqa: BLE001 - "no such table" on a store never migrated
        if "no such table" in str(error) or "does not exist" in str(error):
            return []
        raise
    known = set(MigrationLoader(None, ignore_no_migrations=True).disk_migrations)
    return sorted(f"{app}.{name}" for app, name in applied if (app, name) not in known)


def refuse_newer_migrations(cursor: CursorWrapper) -> None:
    unknown = unknown_migrations(cursor)
    if unknown:
        raise NewerMigrations(unknown)

"""Full-text search over memory and identity content (FEATURES §15.1, §18).

SQLite only: external-content FTS5 tables that index the ``content`` column of the record tables
by their integer rowid (``id``), kept in step by triggers, so the text is stored once. The
``trigram`` tokenizer matches substrings case-insensitively, which also works for Chinese text
(``unicode61`` would treat a run of CJK characters as one token). Terms shorter than three
characters cannot use a trigram index; ``memory/search.py`` answers those with LIKE, and other
database vendors get LIKE for everything.
"""

from django.db import migrations

TABLES = (("memory_records_fts", "memory_memoryrecord"), ("identity_records_fts", "memory_identityrecord"))


def _statements(fts: str, table: str) -> list[str]:
    return [
        f"CREATE VIRTUAL TABLE {fts} USING fts5(content, content='{table}', content_rowid='id', tokenize='trigram')",
        f"CREATE TRIGGER {fts}_ai AFTER INSERT ON {table} BEGIN "
        f"INSERT INTO {fts}(rowid, content) VALUES (new.id, new.content); END",
        f"CREATE TRIGGER {fts}_ad AFTER DELETE ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, content) VALUES ('delete', old.id, old.content); END",
        f"CREATE TRIGGER {fts}_au AFTER UPDATE OF content ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, content) VALUES ('delete', old.id, old.content); "
        f"INSERT INTO {fts}(rowid, content) VALUES (new.id, new.content); END",
        f"INSERT INTO {fts}({fts}) VALUES ('rebuild')",
    ]


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    for fts, table in TABLES:
        for sql in _statements(fts, table):
            schema_editor.execute(sql)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    for fts, _table in TABLES:
        for suffix in ("ai", "ad", "au"):
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {fts}_{suffix}")
        schema_editor.execute(f"DROP TABLE IF EXISTS {fts}")


class Migration(migrations.Migration):
    dependencies = [("memory", "0001_initial")]

    operations = [migrations.RunPython(create, drop)]

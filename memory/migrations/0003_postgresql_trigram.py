"""On PostgreSQL: trigram GIN indexes for memory and identity search (docs/DECISIONS.md D53).

SQLite searches through the FTS5 trigram tables of 0002; PostgreSQL answers the same query with
Django's icontains (``UPPER(content) LIKE UPPER(%term%)``, every term), which these indexes serve
when ``pg_trgm`` is available. The results and their order are the same on both engines: every
term must match, newest first (memory/search.py); there is no relevance ranking.
"""

from django.db import migrations

from groupx_site.store.postgresql import has_trigram_extension

INDEXES = (("memory_records_trgm", "memory_memoryrecord"), ("identity_records_trgm", "memory_identityrecord"))


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql" or not has_trigram_extension(schema_editor):
        return
    for index, table in INDEXES:
        schema_editor.execute(f"CREATE INDEX {index} ON {table} USING gin (UPPER(content) gin_trgm_ops)")


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for index, _table in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {index}")


class Migration(migrations.Migration):
    dependencies = [("memory", "0002_fts")]

    operations = [migrations.RunPython(create, drop)]

"""The storage schema version, recorded in the database (FEATURES §18, docs/DECISIONS.md D42).

The protocol numbers its storage schema (9 for the tables FEATURES §18 lists) and records it in
``schema_migrations``; ``/api/health`` reads it from there (``store.schemaVersion``), so a
database migrated by another build says so. Django's own ``django_migrations`` tracks *how* the
tables were made; this row says *which protocol schema* they are. It runs after every app's
migrations of this version, so the row is written only once the whole schema exists. A later
schema change adds its own migration that inserts the next version.
"""

from django.db import migrations

PROTOCOL_SCHEMA_VERSION = 9  # groupx_site.store.store_integrity.SCHEMA_VERSION when this was written

# The same column on each engine: an ISO-8601 UTC text with milliseconds (D53 for PostgreSQL).
NOW_UTC = {
    "sqlite": "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')",
    "postgresql": "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')",
}


def create(apps, schema_editor):
    now = NOW_UTC[schema_editor.connection.vendor]
    schema_editor.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY NOT NULL, "
                          f"applied_at TEXT NOT NULL DEFAULT ({now}))")


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0002_builtin_actors_and_bindings"),
        ("memory", "0002_fts"),
        ("rooms", "0002_message_search"),
        ("turns", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(create, lambda apps, schema_editor: schema_editor.execute("DROP TABLE schema_migrations")),
        migrations.RunSQL(f"INSERT INTO schema_migrations (version) VALUES ({PROTOCOL_SCHEMA_VERSION})",
                          reverse_sql=f"DELETE FROM schema_migrations WHERE version = {PROTOCOL_SCHEMA_VERSION}"),
    ]

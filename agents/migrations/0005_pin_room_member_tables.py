"""The actors, instances, bindings and delivery cursors are defined in ``rooms/actor_models.py`` now,
still in this app, with their tables named explicitly (D153). The names are the ones Django gave
them, so only the migration state learns them: no table is created, dropped or renamed."""

from django.db import migrations

PINNED = {
    "actor": "agents_actor",
    "agentinstance": "agents_agentinstance",
    "deliverycursor": "agents_deliverycursor",
    "sessionbinding": "agents_sessionbinding",
}


class Migration(migrations.Migration):
    dependencies = [("agents", "0004_agent_lease")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AlterModelTable(name=name, table=table) for name, table in PINNED.items()],
            database_operations=[],
        )
    ]

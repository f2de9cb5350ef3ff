"""The log's JSON columns are written as compact UTF-8 text from now on (``groupx_site.core.text.StoredJSON``),
no longer ASCII-escaped. Only the models' state changes: the column type is the same, so no table is
rebuilt, and the rows written before stay as they are (they decode to the same values)."""

import groupx_site.core.text
from django.db import migrations, models


def stored(**options):
    return models.JSONField(encoder=groupx_site.core.text.StoredJSON, **options)


class Migration(migrations.Migration):

    dependencies = [
        ('rooms', '0004_message_search_in_batches'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AlterField(model_name='clientcommand', name='result', field=stored()),
            migrations.AlterField(model_name='event', name='body', field=stored(default=dict)),
            migrations.AlterField(model_name='event', name='provenance', field=stored(blank=True, null=True)),
            migrations.AlterField(model_name='event', name='targets', field=stored(default=list)),
        ]),
    ]

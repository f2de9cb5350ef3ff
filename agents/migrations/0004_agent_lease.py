from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0003_runtime_worker'),
    ]

    operations = [
        migrations.CreateModel(
            name='AgentLease',
            fields=[
                ('actor_id', models.CharField(max_length=128, primary_key=True, serialize=False)),
                ('worker_id', models.CharField(blank=True, default='', max_length=128)),
                ('acquired_at', models.DateTimeField(blank=True, null=True)),
            ],
        ),
    ]

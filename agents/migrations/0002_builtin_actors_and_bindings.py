"""Seed the built-in actors (FEATURES §3) and the fixed web/operator bindings (FEATURES §4).

The web binding is a persisted row so REST idempotency (binding + clientCommandId) survives restarts.
"""

from django.db import migrations

BUILTIN_ACTORS = [
    ("user:web", "user", "You"),
    ("user:assistant", "user", "房间助理"),
    ("system:groupx", "system", "GroupX"),
    ("agent:codex", "agent", "Codex"),
    ("agent:grok", "agent", "Grok"),
    ("agent:kimi", "agent", "Kimi"),
    ("agent:hermes", "agent", "Hermes"),
    ("agent:claude", "agent", "Claude"),
]


def seed(apps, schema_editor):
    Actor = apps.get_model("agents", "Actor")
    AgentInstance = apps.get_model("agents", "AgentInstance")
    SessionBinding = apps.get_model("agents", "SessionBinding")
    for actor_id, kind, name in BUILTIN_ACTORS:
        Actor.objects.get_or_create(actor_id=actor_id, defaults={"kind": kind, "display_name": name})
    for binding_id, instance_id, actor_id, protocol in (
        ("binding:web", "instance:web", "user:web", "local-rest"),
        ("binding:operator", "instance:operator", "user:assistant", "local-operator"),
    ):
        instance, _ = AgentInstance.objects.get_or_create(
            instance_id=instance_id, defaults={"actor_id": actor_id, "adapter_id": protocol, "status": "ready"}
        )
        SessionBinding.objects.get_or_create(
            binding_id=binding_id,
            defaults={"instance": instance, "actor_id": actor_id, "protocol": protocol, "status": "active"},
        )


class Migration(migrations.Migration):
    dependencies = [("agents", "0001_initial")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]

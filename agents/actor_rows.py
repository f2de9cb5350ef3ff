"""The Actor rows of the roster (``setup_wizard/roster.py``): one per configured agent."""

from __future__ import annotations

from agents.models import Actor
from setup_wizard.roster import configured_agents


def sync_actors() -> None:
    """Upsert an Actor row per configured agent (display names follow the config)."""
    for agent in configured_agents():
        Actor.objects.update_or_create(
            actor_id=agent.actor_id,
            defaults={"kind": "agent", "display_name": agent.display_name, "enabled": agent.enabled},
        )

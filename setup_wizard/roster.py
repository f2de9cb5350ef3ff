"""The live roster: the agents this process started with (pure config: it reads ``groupx.json``).

Targets are validated against it (docs/DECISIONS.md D9): an agent added to ``groupx.json``
after start is "pending restart" and not a target until ``groupx restart``; a disabled agent is
not a target at all.
"""

from __future__ import annotations

from functools import cache

from django.conf import settings

from setup_wizard.config import ResolvedAgent, resolve_agents


@cache
def configured_agents() -> tuple[ResolvedAgent, ...]:
    return tuple(resolve_agents(settings.GROUPX_CONFIG, settings.GROUPX_CONFIG_PATH))


def live_agents() -> list[ResolvedAgent]:
    return [agent for agent in configured_agents() if agent.enabled]


def live_agent(actor_id: str) -> ResolvedAgent | None:
    for agent in live_agents():
        if agent.actor_id == actor_id:
            return agent
    return None

"""Restart one agent's CLI (FEATURES §3 "agent restart", docs/DECISIONS.md D41).

``POST /api/agents/{actorId}/restart``, the admin's "Restart" action and ``groupx agent-restart``
all come here. The command is one ``run_once`` (idempotent and at most once per clientCommandId):
it checks that the agent is live, notes the instance being replaced and, after its commit, asks
the runtime to restart the agent's lane (``Lane.restart``). The answer is 202 at once; what then
happens is told by durable events: ``session.stopped`` (reason ``restart``), ``turn.interrupted``
for a Turn the old CLI was running (its partial text kept), ``session.starting`` and
``session.resumed`` or ``session.ready`` for the new instance. Queued Turns stay queued and run on it.
"""

from __future__ import annotations

from typing import Any

from agents import instances
from agents.models import Actor
from groupx_site.core.errors import GroupXError
from groupx_site.store import layer
from rooms import commands, validation
from setup_wizard import roster

COMMAND_TYPE = "agent.restart"


def check_restart(payload: Any) -> str:
    """The clientCommandId of a well-formed restart body (the body only, no database)."""
    payload = validation.reject_sender_fields(payload)
    validation.reject_unknown_keys(payload, {"clientCommandId"})
    return validation.client_command_id(payload)


def _require_live(actor_id: str) -> None:
    """UNKNOWN_ACTOR for an id that is no agent; UNKNOWN_TARGET for an agent this process does not
    run (disabled, or saved in settings after the start), as for a message's targets."""
    if roster.live_agent(actor_id) is not None:
        return
    known = Actor.objects.filter(actor_id=actor_id, kind="agent").exists() or any(
        agent.actor_id == actor_id for agent in roster.configured_agents()
    )
    if not known:
        raise GroupXError("UNKNOWN_ACTOR", f"no agent {actor_id}", details={"unknownTargets": [actor_id]})
    raise GroupXError(
        "UNKNOWN_TARGET",
        f"{actor_id} is not running in this room (disabled or not started)",
        details={"unknownTargets": [actor_id]},
    )


def restart_agent(binding_id: str, actor_id: str, payload: Any) -> dict[str, Any]:
    """``{actorId, accepted: true, previousInstanceId?}``; the restart itself follows the commit."""
    return accept_restart(binding_id, actor_id, check_restart(payload))


def accept_restart(binding_id: str, actor_id: str, client_command_id: str) -> dict[str, Any]:
    """The command on a body already checked (the REST schema ran ``check_restart``)."""

    def run() -> dict[str, Any]:
        _require_live(actor_id)
        result: dict[str, Any] = {"actorId": actor_id, "accepted": True}
        previous = instances.current_instance_id(actor_id)
        if previous:
            result["previousInstanceId"] = previous
        layer.wake_agents_on_commit({"type": "agents.restart", "actorId": actor_id})  # agents/channel_consumer.py
        return result

    return commands.run_once(
        binding_id=binding_id,
        client_command_id=client_command_id,
        command_type=COMMAND_TYPE,
        canonical={"actorId": actor_id},
        run=run,
    )

"""Chain limits and causality for agent-created Turns (PROTOCOL §6.6, §7; FEATURES §6.5, §6.6).

These are reliability limits, not permissions. A hit is returned to the caller as its code and,
because a stopped chain must never be silent, also appended as a visible ``routing.loop_stopped``
event — in its own transaction, after the command rolled back.
"""

from __future__ import annotations

from django.db import transaction

from groupx_site.core.errors import GroupXError
from rooms import events
from rooms.events import ActorRef
from turns.models import Turn

CHAIN_LIMIT_CODES = ("ROOT_TURN_LIMIT_REACHED", "HOP_LIMIT_REACHED")


def ancestor_actors(turn: Turn) -> list[str]:
    """The actors of the caller's Turn and of every Turn above it, from the durable parent chain."""
    actors: list[str] = []
    seen: set[str] = set()
    current: Turn | None = turn
    while current is not None:
        if current.turn_id in seen:
            raise GroupXError("INVALID_ENVELOPE", "the parent chain of this turn loops", status=409)
        seen.add(current.turn_id)
        actors.append(current.target_actor_id)
        current = current.parent_turn
    return actors


def check_causal_cycle(parent: Turn, targets: list[str]) -> None:
    """Only a synchronous ask whose target is waiting up the chain (itself included) deadlocks."""
    cyclic = sorted(set(targets) & set(ancestor_actors(parent)))
    if cyclic:
        raise GroupXError(
            "CAUSAL_CYCLE",
            f"{', '.join(cyclic)} is already waiting in this chain; use send to reach it asynchronously",
            details={"targets": cyclic},
        )


def check_chain_limits(parent: Turn, targets: list[str], *, hop_limit: int, root_limit: int, actor_limit: int) -> int:
    """Returns the child hop count; raises the limit's code."""
    hop = parent.hop_count + 1
    if hop > hop_limit:
        raise GroupXError(
            "HOP_LIMIT_REACHED",
            f"this chain is {hop} hops deep; the limit is {hop_limit}",
            details={"limitKind": "hopCount", "limit": hop_limit},
        )
    in_root = Turn.objects.filter(root_correlation_id=parent.root_correlation_id)
    if in_root.count() + len(targets) > root_limit:
        raise GroupXError(
            "ROOT_TURN_LIMIT_REACHED",
            f"this chain already has its {root_limit} turns",
            details={"limitKind": "rootTurns", "limit": root_limit},
        )
    busy = [t for t in targets if in_root.filter(target_actor_id=t).count() + 1 > actor_limit]
    if busy:
        raise GroupXError(
            "ROOT_TURN_LIMIT_REACHED",
            f"{', '.join(busy)} was already called {actor_limit} times in this chain",
            details={"limitKind": "actorCallsPerRoot", "limit": actor_limit, "targets": busy},
        )
    return hop


def record_loop_stopped(
    *, error: GroupXError, caller: ActorRef, parent: Turn, command_type: str, targets: list[str]
) -> None:
    with transaction.atomic():
        events.append_event(
            event_type="routing.loop_stopped",
            actor=events.SYSTEM,
            to=targets,
            body={
                "errorCode": error.code,
                "message": error.message,
                "commandType": command_type,
                "callerActorId": caller.actor_id,
                "parentTurnId": parent.turn_id,
                **({"details": error.details} if error.details else {}),
            },
            correlation_id=parent.root_correlation_id,
            causation_id=parent.turn_id,
            provenance={"sourceKind": "system", "subjectActorId": caller.actor_id},
        )

"""Room actions every message that wakes agents shares: the target resolver and the reference check.

The web's post (``turns/messages.py``) and the agents' send and ask (``turns.member_actions``) call
them; the post itself queues Turns, so it lives in ``turns`` (D151).
"""

from __future__ import annotations

from groupx_site.core.errors import GroupXError, invalid
from rooms import validation
from rooms.models import Event
from setup_wizard import roster
from setup_wizard.config import ResolvedAgent


def resolve_targets(to: list[str], *, sender_id: str | None = None) -> list[ResolvedAgent]:
    """The one target resolver: ``@all`` is every live agent but the sender (an agent never wakes
    itself, PROTOCOL §4.1); any other id must be a live agent (404 UNKNOWN_TARGET)."""
    everyone = [a for a in roster.live_agents() if a.actor_id != sender_id] if validation.ALL_TOKEN in to else []
    if validation.ALL_TOKEN in to and not everyone and sender_id is None:
        # The web's @all in a room with no enabled agent names nothing that exists.
        raise GroupXError("UNKNOWN_TARGET", "no agent is enabled", details={"unknownTargets": ["@all"]})
    named = [t for t in to if t != validation.ALL_TOKEN]
    unknown = [t for t in named if roster.live_agent(t) is None]
    if unknown:
        raise GroupXError(
            "UNKNOWN_TARGET",
            f"not an enabled agent of this room: {', '.join(unknown)}",
            details={"unknownTargets": unknown},
        )
    chosen = {agent.actor_id: agent for agent in everyone} | {t: roster.live_agent(t) for t in named}
    if not chosen:  # an agent's @all when it is the only live agent: a body that asks for nothing
        raise invalid("@all names no other agent in this room")
    return sorted(chosen.values(), key=lambda a: a.actor_id)


def check_references_exist(*event_ids: str | None) -> None:
    wanted = [e for e in event_ids if e]
    if not wanted:
        return
    found = set(Event.objects.filter(event_id__in=wanted).values_list("event_id", flat=True))
    missing = [e for e in wanted if e not in found]
    if missing:
        raise invalid(f"no such event: {', '.join(missing)}", unknownEvents=missing)

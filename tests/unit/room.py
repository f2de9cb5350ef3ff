"""Builders for the in-process tier: Turns brought to a status through the real lifecycle."""

from __future__ import annotations

import itertools
from typing import Any

from django.utils import timezone

from agents.models import AgentInstance, SessionBinding
from rooms.events import ActorRef
from rooms.models import Event
from turns import lifecycle
from turns.lifecycle import Claim
from turns.messages import post_message
from turns.models import Turn

_ids = itertools.count(1)


def command_id() -> str:
    return f"unit-{next(_ids)}"


def post(to: list[str] | tuple[str, ...] = ("agent:alpha",), content: str = "hello", **fields: Any) -> dict:
    """``POST /api/messages`` as the web would send it; the 202 body."""
    return post_message({"clientCommandId": command_id(), "to": list(to), "content": content, **fields})


def queued_turn(target: str = "agent:alpha", content: str = "hello") -> str:
    return post([target], content)["turns"][0]["turnId"]


def actor(actor_id: str) -> ActorRef:
    return ActorRef(actor_id, "agent", actor_id.removeprefix("agent:"), f"inst_{actor_id}")


def bind(actor_id: str) -> str:
    """An active MCP binding of ``actor_id`` (what a started session opens)."""
    binding_id = f"binding_{actor_id}_{next(_ids)}"
    instance = AgentInstance.objects.create(
        instance_id=f"inst_{binding_id}",
        actor_id=actor_id,
        adapter_id="kimi",
        status="ready",
        process_started_at=timezone.now(),
    )
    SessionBinding.objects.create(binding_id=binding_id, instance=instance, actor_id=actor_id, protocol="acp")
    return binding_id


def claim(turn_id: str, binding_id: str | None = None) -> Claim | None:
    binding_id = binding_id or bind(Turn.objects.get(turn_id=turn_id).target_actor_id)
    return lifecycle.claim(turn_id, binding_id=binding_id, instance_id=f"inst_{binding_id}", context_through_seq=0)


def running(turn_id: str, binding_id: str | None = None) -> Claim:
    """Claimed, prompt written (write-ahead) and the first native event seen."""
    claimed = claim(turn_id, binding_id)
    assert lifecycle.mark_prompt_invoked(claimed)
    lifecycle.mark_started(claimed, actor(claimed.target_actor_id), native_turn_id="native-1")
    return claimed


def status(turn_id: str) -> str:
    return Turn.objects.get(turn_id=turn_id).status


def event_types(**filters: Any) -> list[str]:
    return list(Event.objects.filter(**filters).values_list("event_type", flat=True))

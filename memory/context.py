"""The Context Packet (FEATURES §14, first version): what an agent is told when it is woken.

Sections, in order: ``[groupx_protocol]`` (ids, cursors and the fixed routing note), the agent's
configured identity, the unread public messages since the agent's delivery cursor (newest first
within the budget, then printed in seq order), the reply chain, and ``[current_message]`` last,
followed by nothing but the message text (the CLIs' fakes and humans read what follows the marker).

Only ``message.created`` bodies ever enter a packet: reasoning records, tool records and Turn
bookkeeping never do.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from rooms.models import Event
from setup_wizard.config import ResolvedAgent
from turns.lifecycle import delivery_cursor

SCHEMA = "groupx.context/0.4"
CONTEXT_TYPES = ("message.created", "operator.dispatch")
REPLY_CHAIN_DEPTH = 64
ROUTING_NOTE = (
    "Every message in this room is visible to everyone in it. Only the agents a message names in its "
    "`to` list are woken; writing @name in text does not wake anyone. Your final answer to this turn is "
    "posted to the room automatically as your reply. To wake another agent, ask it and wait for its "
    "answer, publish progress without waking anyone, or read what happened since this packet was "
    "built, use the GroupX MCP tools (send, ask, collect, publish, read) when they are available."
)


class ContextBudgetExceeded(Exception):
    pass


@dataclass(frozen=True)
class ContextPacket:
    text: str
    through_seq: int
    after_seq: int
    omitted: int


def _entry(event: dict) -> str:
    header = f"- id={event['event_id']} seq={event['seq']} author={event['actor_id']} name={event['actor_display_name']!r}"
    if event["reply_to_event_id"]:
        header += f" reply_to={event['reply_to_event_id']}"
    if event["forwarded_event_id"]:
        header += f" forwarded={event['forwarded_event_id']}"
    content = str((event["body"] or {}).get("content", ""))
    return f"{header}\n{content}"


FIELDS = ("seq", "event_id", "event_type", "actor_id", "actor_display_name", "reply_to_event_id",
          "forwarded_event_id", "body")


def _reply_chain(source: dict) -> list[dict]:
    chain, seen, parent = [], {source["event_id"]}, source["reply_to_event_id"]
    while parent and parent not in seen and len(chain) < REPLY_CHAIN_DEPTH:
        seen.add(parent)
        event = Event.objects.filter(event_id=parent, event_type__in=CONTEXT_TYPES).values(*FIELDS).first()
        if event is None:
            break
        chain.append(event)
        parent = event["reply_to_event_id"]
    chain.reverse()
    return chain


def build_context_packet(agent: ResolvedAgent, source_event_id: str) -> ContextPacket:
    budget = settings.GROUPX_CONFIG.limits.contextCharacters
    source = Event.objects.filter(event_id=source_event_id).values(*FIELDS).get()
    after_seq = delivery_cursor(agent.actor_id)
    chain = _reply_chain(source)
    excluded = {e["event_id"] for e in chain} | {source["event_id"]}

    def render(unread: list[dict]) -> str:
        protocol = "\n".join([
            "[groupx_protocol]",
            f"schema: {SCHEMA}",
            "room: room:main",
            f"target: {agent.actor_id}",
            f"after_seq: {after_seq}",
            f"through_seq: {source['seq']}",
            f"current_event_id: {source['event_id']}",
            f"current_author: {source['actor_id']} ({source['actor_display_name']})",
            f"routing: {ROUTING_NOTE}",
        ])
        parts = [protocol]
        if agent.identity:
            parts.append(f"[configured_agent_identity]\n{agent.identity}")
        if unread:
            parts.append("[room_delta_since_cursor]\n" + "\n".join(_entry(e) for e in unread))
        if chain:
            parts.append("[reply_chain]\n" + "\n".join(_entry(e) for e in chain))
        parts.append(f"[current_message]\n{source['body'].get('content', '')}")
        return "\n\n".join(parts)

    mandatory = render([])
    if len(mandatory) > budget:
        raise ContextBudgetExceeded(f"the mandatory context is {len(mandatory)} characters; the budget is {budget}")
    candidates = list(
        Event.objects.filter(seq__gt=after_seq, seq__lt=source["seq"], event_type__in=CONTEXT_TYPES)
        .exclude(event_id__in=excluded)
        .exclude(body__kind="supervision.watch")
        .order_by("-seq")
        .values(*FIELDS)
    )
    room, chosen = budget - len(mandatory), []
    for event in candidates:  # newest first: what fits is the most recent history
        cost = len(_entry(event)) + 1 + (len("[room_delta_since_cursor]\n\n") if not chosen else 0)
        if cost > room:
            break
        chosen.append(event)
        room -= cost
    chosen.reverse()
    return ContextPacket(render(chosen), source["seq"], after_seq, len(candidates) - len(chosen))

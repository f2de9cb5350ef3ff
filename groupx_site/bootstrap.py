"""``GET /api/bootstrap`` (PROTOCOL §10.1, FEATURES §10): one bounded read snapshot.

It gathers every layer (the log, the Turns, the roster and its health, the pending setup), so it
is wiring, not part of ``rooms`` (docs/ARCHITECTURE.md "Layers").

The recent events come from a reverse ``LIMIT`` on the primary key and the Turns from the status
index, so the cost does not grow with history. ``room.throughSeq`` is the cursor the client then
passes to ``/api/events``; anything committed in between is read by the stream's own tail.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja import Router
from pydantic import BaseModel, Field

from groupx_site.core.contract import route
from groupx_site.core.json_response import json_response
from groupx_site.health_report import current_agent_states
from groupx_site.runtime_identity import product_version
from groupx_site.store import db
from groupx_site.store.dbsnapshot import read_snapshot
from rooms import event_types, history, system_errors
from rooms.events import ENVELOPE_FIELDS, envelope_from_row
from rooms.models import ROOM_ID, Event
from rooms.schemas import Envelope, PageCursor, ReferencedMessage, Response
from setup_wizard import roster
from setup_wizard.pending import pending_agents
from turns.models import Turn
from turns.states import ACTIVE_STATUSES

RECENT_EVENTS = 100

router = Router(tags=["room"])


class RoomCursor(BaseModel):
    roomId: str
    throughSeq: int


class AgentCard(Response):
    actorId: str
    displayName: str
    driver: str
    status: str
    cwd: str
    host: str = "local"  # where the agent runs: "local" or its ssh destination (D51)
    enabled: bool
    capabilities: dict[str, Any]
    instanceId: str | None = None
    lastError: Any = None
    # The active system.error conditions about this agent: condition -> {code, message} (D89).
    problems: dict[str, dict[str, str]] | None = None


class ActiveTurn(BaseModel):
    turnId: str
    targetActorId: str
    status: str
    sourceEventId: str


class Bootstrap(Response):
    """``room.throughSeq`` is the cursor to pass to ``/api/events``; ``previousPage`` pages back."""

    schema_: str = Field(alias="schema")
    version: str  # GroupX's release (CHANGELOG.md)
    room: RoomCursor
    agents: list[AgentCard]
    pendingAgents: list[dict[str, Any]]
    recentEvents: list[Envelope]
    activeTurns: list[ActiveTurn]
    eventTypes: Any
    previousPage: PageCursor | None = None
    referencedMessages: list[ReferencedMessage] | None = None


def agent_cards(problems: dict[str, dict[str, dict[str, str]]] | None = None) -> list[dict[str, Any]]:
    cards = []
    states = current_agent_states()
    for agent in roster.live_agents():
        state = states[agent.actor_id]
        card = {
            "actorId": agent.actor_id,
            "displayName": agent.display_name,
            "driver": agent.driver,
            "status": state["status"],
            "cwd": agent.cwd,
            "host": agent.host,  # "local" or the ssh destination it runs on (D51)
            "enabled": agent.enabled,
            "capabilities": {
                "transport": "structured",
                "transportLifecycle": "active",
                "access": "unrestricted",
                "currentTurnMcp": state.get("mcpVerified", False),
            },
        }
        if state.get("instanceId"):
            card["instanceId"] = state["instanceId"]
        if state.get("lastError"):
            card["lastError"] = state["lastError"]
        if (problems or {}).get(agent.actor_id):
            card["problems"] = problems[agent.actor_id]
        cards.append(card)
    return cards


def bootstrap() -> dict[str, Any]:
    with read_snapshot():
        rows = list(Event.objects.order_by("-seq").values(*ENVELOPE_FIELDS)[:RECENT_EVENTS])
        rows.reverse()
        referenced = history.with_references({}, rows)
        turns = list(
            Turn.objects.filter(status__in=ACTIVE_STATUSES)
            .order_by("enqueue_seq")
            .values("turn_id", "target_actor_id", "status", "source_event_id")
        )
        problems = system_errors.active_by_agent()
    through_seq = rows[-1]["seq"] if rows else 0
    snapshot: dict[str, Any] = {
        "schema": "groupx.bootstrap/0.1",
        "version": product_version(),
        "room": {"roomId": ROOM_ID, "throughSeq": through_seq},
        "agents": agent_cards(problems),
        # Saved through /setup after this process started: shown, counted, not targetable (FEATURES §2.3).
        "pendingAgents": pending_agents(settings.GROUPX_CONFIG_PATH, {a.actor_id for a in roster.live_agents()}),
        "recentEvents": [envelope_from_row(row) for row in rows],
        "activeTurns": [
            {
                "turnId": t["turn_id"],
                "targetActorId": t["target_actor_id"],
                "status": t["status"],
                "sourceEventId": t["source_event_id"],
            }
            for t in turns
        ],
        # The event-type table (rooms/event_types.py), so the page keeps no copy of it; an added
        # field, which older pages ignore.
        "eventTypes": event_types.for_the_page(),
    }
    if rows and rows[0]["seq"] > 1:
        snapshot["previousPage"] = {"beforeSeq": rows[0]["seq"]}
    # Excerpts of the messages the recent events reply to that are older than them (an added field).
    snapshot.update(referenced)
    return snapshot


# The operation id it had under rooms/api.py, so /api/openapi.json names it as before.
@router.get(
    "/bootstrap",
    summary="The room snapshot and the cursor to stream from",
    operation_id="rooms_api_get_bootstrap",
    **route({200: Bootstrap}),
)
async def get_bootstrap(request: HttpRequest):
    return json_response(await db.read(bootstrap)())

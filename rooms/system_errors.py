"""``system.error``: the failures outside any Turn that the person must know about (PROTOCOL §14:
an error that affects the user is public), one durable event when a condition begins and one when
it heals (docs/DECISIONS.md D89).

A condition is a stable key naming what failed (``session:agent:kimi``, ``memory.dated:agent:kimi``,
``room.summary``, ``store.integrity``, ``worker.none``, ``lease.lost:<workerId>``). ``report``
writes ``{condition, code, message, status: "active"}`` only when the condition is not active
already, so a retry that fails again writes nothing; ``resolve`` writes ``status: "resolved"`` only
when it is active. The log is the truth: the latest event of a condition (its own correlation id,
``system:<condition>``, read through the correlation index) says whether it is active, so a restarted
process, or another process of the room, continues where the last one left.

Call inside the writer (``db.write``); each call is its own atomic block.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from groupx_site.core.errors import declared
from rooms import event_types
from rooms.events import SYSTEM, append_event
from rooms.models import Event

ACTIVE = "active"
RESOLVED = "resolved"
MESSAGE_CHARACTERS = 500


def _correlation(condition: str) -> str:
    return f"system:{condition}"


def latest(condition: str) -> dict[str, Any] | None:
    """The body of the condition's latest ``system.error``, or None when it never happened."""
    row = (
        Event.objects.filter(correlation_id=_correlation(condition), event_type=event_types.SYSTEM_ERROR)
        .order_by("-seq")
        .values_list("body", flat=True)
        .first()
    )
    return row


def is_active(condition: str) -> bool:
    found = latest(condition)
    return found is not None and found.get("status") == ACTIVE


def report(condition: str, code: str, message: str, *, actor_id: str | None = None) -> bool:
    """The condition began: one public event, unless it is active already. True when written."""
    code = declared(code).value  # a code no document explains never reaches the room
    with transaction.atomic():
        if is_active(condition):
            return False
        _write(condition, code, message, ACTIVE, actor_id)
    return True


def resolve(condition: str, message: str) -> bool:
    """The condition healed: one public event if it was active. True when written."""
    with transaction.atomic():
        found = latest(condition)
        if found is None or found.get("status") != ACTIVE:
            return False
        _write(condition, found["code"], message, RESOLVED, found.get("actorId"))
    return True


def active_conditions(prefix: str) -> list[str]:
    """Every active condition whose key starts with ``prefix`` (for a watcher that heals them)."""
    return [condition for condition, body in _latest_bodies(prefix).items() if body.get("status") == ACTIVE]


def active_by_agent() -> dict[str, dict[str, dict[str, str]]]:
    """The active conditions about an agent: actorId -> condition -> {code, message} (its card)."""
    found: dict[str, dict[str, dict[str, str]]] = {}
    for condition, body in _latest_bodies("").items():
        if body.get("status") == ACTIVE and body.get("actorId"):
            found.setdefault(body["actorId"], {})[condition] = {"code": body["code"], "message": body["message"]}
    return found


def _latest_bodies(prefix: str) -> dict[str, dict[str, Any]]:
    """Each condition's latest body (there are few: one event per change of a condition)."""
    bodies = (
        Event.objects.filter(event_type=event_types.SYSTEM_ERROR, correlation_id__startswith=_correlation(prefix))
        .order_by("seq")
        .values_list("body", flat=True)
    )
    return {body["condition"]: body for body in bodies}


def _write(condition: str, code: str, message: str, status: str, actor_id: str | None) -> None:
    body: dict[str, Any] = {
        "condition": condition,
        "code": code,
        "message": message[:MESSAGE_CHARACTERS],
        "status": status,
    }
    provenance: dict[str, Any] = {"sourceKind": "system"}
    if actor_id is not None:
        body["actorId"] = actor_id  # the agent card it concerns
        provenance["subjectActorId"] = actor_id
    append_event(
        event_type=event_types.SYSTEM_ERROR,
        actor=SYSTEM,
        correlation_id=_correlation(condition),
        body=body,
        provenance=provenance,
        returns_event=False,
    )

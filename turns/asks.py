"""``ask`` and ``collect``: wait, boundedly, for the exact child Turns of one message (PROTOCOL §6.3,
§6.4). A wait that ends early returns ``pending`` — never a fake terminal state — and the Turns go
on; ``collect`` with the same message id picks them up later without dispatching anything again.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from django.conf import settings

from groupx_site.core.errors import GroupXError, invalid
from groupx_site.store import db
from rooms import bus, validation
from rooms.models import Event
from turns import lifecycle
from turns.actions import queue_metadata
from turns.member_actions import bounded_int, check_wake_payload, resolve_caller, send_to_agents
from turns.models import Turn
from turns.states import COMPLETED, TERMINAL_STATUSES

MAX_WAIT_MS = 60_000
PENDING_NOTE = (
    "Still running. To keep waiting for this same request, call collect with messageEventId {id}; "
    "do not send or ask again for it."
)


def _result_for(turn: Turn) -> dict[str, Any]:
    position, active = queue_metadata(turn.target_actor_id, turn.enqueue_seq) if turn.is_active else (0, None)
    entry: dict[str, Any] = {"target": turn.target_actor_id, "turnId": turn.turn_id, "queuePosition": position}
    if active:
        entry["activeTurnId"] = active
    if turn.status not in TERMINAL_STATUSES:
        entry["status"] = "pending"
        return entry
    entry["status"] = turn.status if turn.status in (COMPLETED, "failed", "cancelled") else "failed"
    if turn.status == COMPLETED and turn.response_event_id:
        entry["responseEventId"] = turn.response_event_id
        response = Event.objects.filter(event_id=turn.response_event_id).values_list("body", flat=True).first()
        entry["content"] = (response or {}).get("content", "")
    if turn.error_code or turn.status == "interrupted":
        entry["errorCode"] = turn.error_code or "TURN_INTERRUPTED"
    return entry


def snapshot(message_event_id: str) -> dict[str, Any]:
    source = Event.objects.filter(event_id=message_event_id).values("correlation_id").first()
    turns = list(Turn.objects.filter(source_event_id=message_event_id).order_by("target_actor_id"))
    results = [_result_for(t) for t in turns]
    pending = any(r["status"] == "pending" for r in results)
    if pending:
        note = PENDING_NOTE.format(id=message_event_id)[:500]
        for r in results:
            if r["status"] == "pending":
                r["note"] = note
    return {
        "messageEventId": message_event_id,
        "correlationId": source["correlation_id"] if source else None,
        "state": "pending" if pending else "terminal",
        "results": results,
    }


def _queued_behind_other_work(result: dict[str, Any]) -> bool:
    return any(r["status"] == "pending" and r["queuePosition"] > 0 for r in result["results"])


async def wait_for_children(
    message_event_id: str, timeout_ms: int, *, return_when_queued: bool = True
) -> dict[str, Any]:
    """Return at once when a child waits behind other work (unless ``return_when_queued`` is False:
    the operator's worker_ask, which no Turn of its own holds up, waits its whole time); otherwise
    wait until every child is terminal or the time is up. Durable commits wake the wait (the bus),
    so no polling loop spins."""
    read = db.read(snapshot)
    listener = bus.subscribe(max_frames=8, max_bytes=65_536)
    try:
        result = await read(message_event_id)
        if result["state"] == "terminal" or (return_when_queued and _queued_behind_other_work(result)):
            return result
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        while result["state"] == "pending":
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            listener.signal.clear()
            if not listener.durable_pending:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(listener.signal.wait(), timeout=min(remaining, 2.0))
            listener.durable_pending = False
            listener.take_transients()
            result = await read(message_event_id)
        return result
    finally:
        bus.unsubscribe(listener)


def _wait_ms(payload: dict[str, Any]) -> int:
    default = min(settings.GROUPX_CONFIG.timeouts.askMs, MAX_WAIT_MS)
    return bounded_int(payload, "timeoutMs", 1, MAX_WAIT_MS, default)


async def member_ask(binding_id: str, payload: Any) -> dict[str, Any]:
    command = check_wake_payload(payload, {"timeoutMs", "cancelOnTimeout"})  # validation only: no thread
    wait_ms = _wait_ms(payload)
    cancel_on_timeout = payload.get("cancelOnTimeout", False)
    if not isinstance(cancel_on_timeout, bool):
        raise invalid("cancelOnTimeout must be true or false")
    sent = await db.write(send_to_agents)(binding_id, command, command_type="mcp.ask")
    result = await wait_for_children(sent["messageEventId"], wait_ms)
    # Only a wait that ran out cancels: an answer given at once because a child waits behind other
    # work (FEATURES §11) is no timeout, and cancelling then would drop the question unasked.
    if result["state"] == "pending" and cancel_on_timeout and not _queued_behind_other_work(result):
        for entry in result["results"]:
            if entry["status"] == "pending":
                await db.write(lifecycle.request_cancel)(entry["turnId"])
    return result


def check_collect(payload: Any) -> tuple[str, int]:
    """The body alone (no database): a bad body is refused for what it says, before its
    messageEventId is looked up (docs/ARCHITECTURE.md "The write path", docs/DECISIONS.md D38)."""
    payload = validation.reject_sender_fields(payload)
    validation.reject_unknown_keys(payload, {"messageEventId", "timeoutMs"})
    message_id = validation.optional_reference(payload, "messageEventId")
    if message_id is None:
        raise invalid("messageEventId is required")
    return message_id, _wait_ms(payload)


def find_ask(binding_id: str, message_id: str) -> None:
    """The ask ``message_id`` names is in the caller's chain, or UNKNOWN_TARGET."""
    caller = resolve_caller(binding_id)
    source = Event.objects.filter(event_id=message_id).values("root_correlation_id").first()
    if (
        source is None
        or source["root_correlation_id"] != caller.turn.root_correlation_id
        or not Turn.objects.filter(source_event_id=message_id).exists()
    ):
        raise GroupXError(
            "UNKNOWN_TARGET", "no ask with this messageEventId in your chain", details={"unknownTargets": [message_id]}
        )


async def member_collect(binding_id: str, payload: Any) -> dict[str, Any]:
    message_id, wait_ms = check_collect(payload)  # validation only: no thread
    await db.write(find_ask)(binding_id, message_id)
    return await wait_for_children(message_id, wait_ms)

"""``watch``: an observer follows its worker Turn, milestone by milestone (FEATURES §12, PROTOCOL §6.7).

A watch blocks until the subject's next milestone (it started, a tool started or finished, another
4,096 characters of reply streamed, it ended) or, with ``until=terminal``, until it ended; or until
its timeout. It answers a bounded snapshot and records that it looked (``supervision.observed``).

A snapshot holds only what the room may see: the Turn's status, the task's reference and excerpt,
public message excerpts (never a watch brief), tool names with their status, the steer count. Never
reasoning, tool arguments or results, stderr or a native payload; and it is never written into a
Context Packet, memory or a compaction's input.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max, Q

from groupx_site.core.errors import invalid
from groupx_site.store import db
from memory.transcript import WATCH_BRIEF_KIND
from rooms import bus, event_types, events, validation
from rooms.models import Event
from turns import supervision as pairing
from turns.member_actions import bounded_int, resolve_caller
from turns.models import SupervisionPair, SupervisionSteerCount, Turn, TurnAttempt
from turns.states import CANCELLED, DISPATCHING, RUNNING, TERMINAL_STATUSES

UNTIL = ("next_milestone", "terminal")
MAX_WATCH_MS = 3_600_000
CONTENT_MILESTONE = 4_096  # characters of streamed reply between two milestones
RECHECK_SECONDS = 2.0  # a waiting watch reads the statuses again this often (as ask's wait does)
EXCERPT = 500
MAX_MESSAGES = 8
MAX_TOOLS = 64
TOOL_NAME = 64
WATCH_FIELDS = {"subjectTurnId", "afterSeq", "until", "timeoutMs"}
MILESTONE_TYPES = (event_types.TURN_STARTED, *event_types.TURN_TERMINALS.values())


@dataclass(frozen=True)
class WatchRequest:
    subject_turn_id: str | None
    after_seq: int | None
    until: str
    timeout_ms: int


def check_watch(payload: Any) -> WatchRequest:
    payload = validation.reject_sender_fields(payload or {})
    validation.reject_unknown_keys(payload, WATCH_FIELDS)
    until = payload.get("until", UNTIL[0])
    if until not in UNTIL:
        raise invalid(f"until must be one of {', '.join(UNTIL)}")
    return WatchRequest(
        subject_turn_id=validation.optional_reference(payload, "subjectTurnId"),
        after_seq=bounded_int(payload, "afterSeq", 0, 2**62, None),
        until=until,
        timeout_ms=bounded_int(payload, "timeoutMs", 1, MAX_WATCH_MS, settings.GROUPX_CONFIG.timeouts.watchMs),
    )


# ---- tools seen live ------------------------------------------------------------------------------
# Tool progress is transient (it is stored only with the terminal), so the tools a running subject
# used are the ones a watch saw go by. Bounded: the newest turns only, MAX_TOOLS each.
_live_tools: OrderedDict[str, OrderedDict[str, dict[str, Any]]] = OrderedDict()
LIVE_TURNS = 256


def tool_entry(record: dict[str, Any]) -> dict[str, Any]:
    """A tool's name, status and id; nothing of its arguments or results."""
    details = record.get("details")
    if not isinstance(details, dict):
        details = {}
    entry = {
        "name": str(details.get("name") or "tool")[:TOOL_NAME],
        "status": str(details.get("status") or record.get("nativeType", ""))[:32],
    }
    if isinstance(record.get("toolCallId"), str):
        entry["toolCallId"] = record["toolCallId"][:256]
    return entry


def _remember_tool(turn_id: str, record: dict[str, Any]) -> None:
    tools = _live_tools.setdefault(turn_id, OrderedDict())
    _live_tools.move_to_end(turn_id)
    entry = tool_entry(record)
    key = entry.get("toolCallId") or f"{entry['name']}#{len(tools)}"
    if key in tools or len(tools) < MAX_TOOLS:
        tools[key] = entry
    while len(_live_tools) > LIVE_TURNS:
        _live_tools.popitem(last=False)


# ---- the snapshot -----------------------------------------------------------------------------------


def _excerpt(body: dict[str, Any] | None) -> str:
    return str((body or {}).get("content", ""))[:EXCERPT]


def _tools(turn: Turn, live: list[dict[str, Any]]) -> list[dict[str, Any]]:
    recorded = Event.objects.filter(event_type=event_types.TOOL_PROGRESS_RECORDED, causation_id=turn.turn_id)
    tools = [tool_entry(body) for body in recorded.order_by("seq").values_list("body", flat=True)[:MAX_TOOLS]]
    return tools or live[:MAX_TOOLS]


def _last_steer_reason(subject_turn_id: str) -> str | None:
    body = (
        Event.objects.filter(event_type=event_types.SUPERVISION_STEERED, body__subjectTurnId=subject_turn_id)
        .order_by("-seq")
        .values_list("body", flat=True)
        .first()
    )
    return body["reason"] if body else None


def snapshot(
    pair: SupervisionPair, subject: Turn, after_seq: int | None, live_tools: Sequence[dict[str, Any]] = ()
) -> dict[str, Any]:
    """What the observer may see of ``subject`` now (PROTOCOL §6.7: may and may not). ``live_tools``:
    the tools watches saw it use while it runs (taken on the event loop, which owns that table)."""
    turn_events = Event.objects.filter(Q(causation_id=subject.turn_id) | Q(event_id=subject.queued_event_id))
    task: dict[str, Any] = dict(
        Event.objects.filter(event_id=pair.source_event_id).values("event_id", "seq", "body").first() or {}
    )
    floor = after_seq if after_seq is not None else task.get("seq", 0)
    messages = list(
        Event.objects.filter(
            event_type=event_types.MESSAGE_CREATED, root_correlation_id=pair.correlation_id, seq__gt=floor
        )
        .exclude(Q(body__has_key="kind") & Q(body__kind=WATCH_BRIEF_KIND))
        .order_by("-seq")
        .values("event_id", "seq", "actor_id", "body")[:MAX_MESSAGES]
    )
    certainty = (
        TurnAttempt.objects.filter(turn=subject)
        .order_by("-claimed_at")
        .values_list("delivery_certainty", flat=True)
        .first()
    )
    count = (
        SupervisionSteerCount.objects.filter(subject_turn_id=subject.turn_id)
        .values_list("steer_count", flat=True)
        .first()
        or 0
    )
    result: dict[str, Any] = {
        "turnId": subject.turn_id,
        "targetActorId": subject.target_actor_id,
        "status": subject.status,
        "lastSeq": turn_events.aggregate(top=Max("seq"))["top"] or subject.enqueue_seq,
        "terminal": subject.status in TERMINAL_STATUSES,
        "subjectCancelled": subject.status == CANCELLED,
        "task": {"eventId": pair.source_event_id, "excerpt": _excerpt(task.get("body"))},
        "messages": [
            {"eventId": m["event_id"], "seq": m["seq"], "actorId": m["actor_id"], "excerpt": _excerpt(m["body"])}
            for m in reversed(messages)
        ],
        "tools": _tools(subject, list(live_tools)),
        "steerCount": count,
    }
    if certainty:
        result["deliveryCertainty"] = certainty
    reason = _last_steer_reason(subject.turn_id) if count else None
    if reason:
        result["lastSteerReason"] = reason
    return result


def milestone_since(subject: Turn, after_seq: int) -> bool:
    """A durable milestone of ``subject`` (started, ended) with a seq above ``after_seq``."""
    return Event.objects.filter(
        causation_id=subject.turn_id, event_type__in=MILESTONE_TYPES, seq__gt=after_seq
    ).exists()


# ---- the tool -------------------------------------------------------------------------------------


@dataclass
class _Watch:
    binding_id: str
    watcher_turn_id: str  # the observer's own Turn: when it stops, so does its watch
    pair_id: str
    subject_turn_id: str
    status: str  # when the watch began
    ready: bool  # a milestone is already there: answer at once


def _begin(binding_id: str, request: WatchRequest) -> _Watch:
    caller = resolve_caller(binding_id)
    pair = pairing.watched_pair(caller.turn, "watch")
    subject = pairing.choose_subject(pair, request.subject_turn_id)
    ready = subject.status in TERMINAL_STATUSES or (
        request.until == "next_milestone"
        and request.after_seq is not None
        and milestone_since(subject, request.after_seq)
    )
    return _Watch(binding_id, caller.turn.turn_id, pair.pair_id, subject.turn_id, subject.status, ready)


def _statuses(watch: _Watch) -> tuple[str | None, str | None]:
    """(the subject's status, the observer's own Turn's status)."""
    found = dict(
        Turn.objects.filter(turn_id__in=[watch.subject_turn_id, watch.watcher_turn_id]).values_list("turn_id", "status")
    )
    return found.get(watch.subject_turn_id), found.get(watch.watcher_turn_id)


def _observe(watch: _Watch, request: WatchRequest, timed_out: bool, live_tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The snapshot and its ``supervision.observed`` record, in one transaction. A watch has no
    clientCommandId (PROTOCOL §6.7): its record is appended in a transaction of its own, as
    ``routing.loop_stopped`` is, not through a command receipt."""
    with transaction.atomic():
        return _observe_now(watch, request, timed_out, live_tools)


def _observe_now(
    watch: _Watch, request: WatchRequest, timed_out: bool, live_tools: list[dict[str, Any]]
) -> dict[str, Any]:
    caller = resolve_caller(watch.binding_id)
    pair = SupervisionPair.objects.get(pair_id=watch.pair_id)
    subject = Turn.objects.get(turn_id=watch.subject_turn_id)
    shot = snapshot(pair, subject, request.after_seq, live_tools)
    observed = events.append_event(
        event_type=event_types.SUPERVISION_OBSERVED,
        actor=caller.actor,
        to=[subject.target_actor_id],
        body={
            "pairId": pair.pair_id,
            "subjectTurnId": subject.turn_id,
            "status": subject.status,
            "until": request.until,
            "timedOut": timed_out,
            "steerCount": shot["steerCount"],
        },
        correlation_id=pair.correlation_id,
        causation_id=caller.turn.turn_id,
        provenance={"sourceKind": "supervision", "subjectActorId": subject.target_actor_id},
    )
    # Pass it back as afterSeq: every milestone at or below it is in this snapshot.
    shot["watchCursor"] = observed.seq
    return {"snapshot": shot, "until": request.until, "timedOut": timed_out}


def _reached(request: WatchRequest, began: str, now: str | None, *, streamed: int, tools_moved: bool) -> bool:
    if now in TERMINAL_STATUSES:
        return True
    if request.until == "terminal":
        return False
    # Dispatching and cancelling are steps on the way, not milestones: started and ended are.
    return (now != began and now == RUNNING) or tools_moved or streamed >= CONTENT_MILESTONE


async def member_watch(binding_id: str, payload: Any) -> dict[str, Any]:
    request = check_watch(payload)
    # Listening starts before the first read, so no commit between the two goes unseen.
    listener = bus.subscribe(max_frames=256, max_bytes=1_048_576)
    try:
        watch = await db.read(_begin)(binding_id, request)
        timed_out = False
        if not watch.ready:
            timed_out = not await _wait(watch, request, listener)
        seen = list(_live_tools.get(watch.subject_turn_id, {}).values())
        return await db.write(_observe)(watch, request, timed_out, seen)
    finally:
        bus.unsubscribe(listener)


async def _wait(watch: _Watch, request: WatchRequest, listener: bus.Listener) -> bool:
    """True when a milestone came before the timeout."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + request.timeout_ms / 1000
    streamed, tools_moved = 0, False
    status: str | None = watch.status
    watching: str | None = RUNNING
    while True:
        for envelope in listener.take_transients():
            body = envelope.get("body") or {}
            if body.get("turnId") != watch.subject_turn_id:
                continue
            if envelope["type"] == event_types.TOOL_PROGRESS:
                _remember_tool(watch.subject_turn_id, body)
                tools_moved = True
            elif envelope["type"] == event_types.TURN_CONTENT_DELTA:
                streamed += len(str(body.get("text", "")))
        if listener.durable_pending:
            listener.durable_pending = False
            status, watching = await db.read(_statuses)(watch)
        if watching not in (RUNNING, DISPATCHING):
            return False  # the Watch Turn was cancelled or ended: nobody waits for this answer
        if _reached(request, watch.status, status, streamed=streamed, tools_moved=tools_moved):
            return True
        remaining = deadline - loop.time()
        if remaining <= 0:
            return False
        listener.signal.clear()
        if listener.durable_pending or listener.transients:
            continue
        try:
            await asyncio.wait_for(listener.signal.wait(), timeout=min(remaining, RECHECK_SECONDS))
        except TimeoutError:
            # The commit may come from another process (split mode), whose notice the channel
            # layer may lose: the table is read again at an interval (docs/DECISIONS.md D43).
            listener.durable_pending = True

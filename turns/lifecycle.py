"""The Turn lifecycle on the database side (PROTOCOL §2.1, §2.2, §5; FEATURES §7).

Each function is one short IMMEDIATE transaction, called by the agent runtime through
``sync_to_async``; none holds a transaction across an ``await``. Every status change is a
conditional UPDATE checked against the transition table (``turns.transitions.move_turn``, the
fixed statements' ``turns.states.CLAIM`` / ``START``, or ``check_move`` before the terminal
``turns.sql.finish_turn``), so a cancel racing a claim or a terminal can never produce two
outcomes, and an illegal change raises.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from django.db import DEFAULT_DB_ALIAS, transaction
from django.db.models import QuerySet
from django.utils import timezone

from groupx_site.core.ids import new_id
from memory import sql as memory_sql
from memory.dated_sources import register_source as register_dated_memory_source
from rooms import event_types, events
from rooms.actor_models import DeliveryCursor
from rooms.events import ActorRef
from rooms.models import ROOM_ID, Event
from turns import sql as turn_sql
from turns import wakeups
from turns.models import Turn, TurnAttempt
from turns.sql import TerminalRead
from turns.states import (
    CANCELLED,
    CANCELLING,
    COMPLETED,
    DISPATCHING,
    FAILED,
    INTERRUPTED,
    QUEUED,
    RUNNING,
    TERMINAL_STATUSES,
    can_move,
    check_move,
)
from turns.transitions import move_turn

TURN_INTERRUPTED = "TURN_INTERRUPTED"
TRANSPORT_MODE_MISMATCH = "TRANSPORT_MODE_MISMATCH"
# The one transport GroupX selects (PROTOCOL §2.1): every Turn it creates snapshots it.
SELECTED_TRANSPORT = "structured"
UNKNOWN_TARGET = "UNKNOWN_TARGET"
# A failure's ``message`` in its terminal event is for people reading the room; bounded like a
# session failure's (agents/sessions.py).
MESSAGE_CHARACTERS = 500


@dataclass
class Claim:
    """What a lane needs to run one claimed Turn."""

    turn_id: str
    attempt_id: str
    target_actor_id: str
    source_event_id: str
    correlation_id: str
    root_correlation_id: str


@dataclass
class TurnOutcome:
    """Everything the terminal transaction writes, gathered while the native turn ran."""

    status: str  # completed | failed | cancelled | interrupted
    content: str = ""
    error_code: str | None = None
    message: str = ""  # what went wrong, in words, for a failed or interrupted Turn
    reasoning: str = ""
    tool_records: list[dict[str, Any]] = field(default_factory=list)
    # Facts about the Turn added to its terminal event's body, e.g. ``textRepaired`` (D25).
    terminal_facts: dict[str, Any] = field(default_factory=dict)


def next_queued_turn(actor_id: str) -> Turn | None:
    """The FIFO head of a lane (oldest enqueue_seq), or None. A lane asks after every Turn, so this is
    one fixed SELECT of the columns a lane uses; like ``.only()``, any other field loads on access."""
    head = turn_sql.lane_head(actor_id)
    return None if head is None else Turn.from_db(DEFAULT_DB_ALIAS, turn_sql.LANE_HEAD_COLUMNS, head)


def claim(
    turn_id: str, *, binding_id: str, instance_id: str, context_through_seq: int, summary_through_seq: int | None = None
) -> Claim | None:
    """CAS queued → dispatching, open a ``prepared + not_delivered`` attempt and append
    ``turn.dispatched``. None when someone else moved the Turn first (a cancel).
    ``summary_through_seq``: the room checkpoint the packet embeds (FEATURES §14), or None."""
    with transaction.atomic():
        # The CAS and the read of what the Claim carries are one UPDATE … RETURNING.
        moved = turn_sql.claim_turn(turn_id, binding_id)
        if moved is None:
            return None
        claim = Claim(turn_id, new_id("att"), *moved)
        turn_sql.insert_attempt(
            attempt_id=claim.attempt_id,
            turn_id=turn_id,
            binding_id=binding_id,
            instance_id=instance_id,
            context_through_seq=context_through_seq,
            summary_through_seq=summary_through_seq,
            claimed_at=timezone.now(),
        )
        events.turn_event(
            event_type=event_types.TURN_DISPATCHED,
            actor=events.SYSTEM,
            turn_id=turn_id,
            target_actor_id=claim.target_actor_id,
            correlation_id=claim.correlation_id,
            root_correlation_id=claim.root_correlation_id,
            body={"attemptId": claim.attempt_id, "targetActorId": claim.target_actor_id},
            idempotency_key=f"turn:{turn_id}:dispatched:{claim.attempt_id}",
            returns_event=False,
        )
    return claim


def mark_prompt_invoked(claim: Claim) -> bool:
    """Write-ahead, in its own commit, before the native prompt is written: ``prompt_invoked +
    unknown``. False when the Turn was cancelled first: then the prompt must never be sent."""
    with transaction.atomic():
        if turn_sql.turn_status(claim.turn_id) != DISPATCHING:
            return False
        turn_sql.attempt_prompt_invoked(claim.attempt_id, timezone.now())
    return True


def mark_started(claim: Claim, actor: ActorRef, native_turn_id: str | None) -> None:
    """The first native event: delivery is now certain; the Turn runs (unless already cancelling)."""
    now = timezone.now()
    with transaction.atomic():
        turn_sql.attempt_started(claim.attempt_id, native_turn_id, now)
        # The native id always; dispatching → running (a cancelling Turn stays cancelling): one UPDATE.
        turn_sql.start_turn(claim.turn_id, native_turn_id, now)
        body: dict[str, Any] = {"attemptId": claim.attempt_id}
        if native_turn_id:
            body["nativeTurnId"] = native_turn_id
        events.turn_event(
            event_type=event_types.TURN_STARTED,
            actor=actor,
            turn_id=claim.turn_id,
            target_actor_id=claim.target_actor_id,
            correlation_id=claim.correlation_id,
            root_correlation_id=claim.root_correlation_id,
            body=body,
            idempotency_key=f"turn:{claim.turn_id}:started:{claim.attempt_id}",
            source_kind="adapter",
            returns_event=False,
        )


def checkpoint_partial_text(turn_id: str, text: str) -> None:
    with transaction.atomic():
        Turn.objects.filter(turn_id=turn_id).exclude(status__in=TERMINAL_STATUSES).update(partial_text=text)


def current_status(turn_id: str) -> str | None:
    return Turn.objects.filter(turn_id=turn_id).values_list("status", flat=True).first()


def finish(claim: Claim | None, turn_id: str, outcome: TurnOutcome, agent: ActorRef) -> str | None:
    """The terminal transaction, in the protocol's order: reasoning record → tool progress records
    → response message (success only) → exactly one terminal event; then the Turn and attempt rows
    and the delivery cursor. Returns the terminal status written, or None if the Turn was already
    terminal (a duplicate or late native terminal is ignored)."""
    try:
        return _finish(claim, turn_id, outcome, agent)
    except _TurnMoved:
        return None


class _TurnMoved(Exception):
    """The status CAS of ``finish`` matched no row: everything it wrote is rolled back."""


def _finish(claim: Claim | None, turn_id: str, outcome: TurnOutcome, agent: ActorRef) -> str | None:
    status = outcome.status
    with transaction.atomic():
        # The Turn, the claim's attempt and the source message in one read (turns/sql.py).
        turn = turn_sql.terminal_read(turn_id, claim.attempt_id if claim else None)
        if turn is None or turn.status in TERMINAL_STATUSES:
            return None
        delivered = turn.delivery_certainty == "delivered"
        if status == COMPLETED and not delivered:
            status, outcome.error_code = FAILED, outcome.error_code or "PROTOCOL_INVALID_MESSAGE"
        terminal_body: dict[str, Any] = {"status": status}
        if outcome.reasoning:
            record = _turn_record(
                turn_id,
                turn,
                agent,
                event_types.TURN_REASONING_RECORDED,
                {"content": outcome.reasoning, "terminalStatus": status},
                "reasoning",
            )
            terminal_body["reasoningEventId"] = record.event_id
        tool_ids = [
            _turn_record(turn_id, turn, agent, event_types.TOOL_PROGRESS_RECORDED, tool, f"tool:{index}").event_id
            for index, tool in enumerate(outcome.tool_records)
        ]
        if tool_ids:
            terminal_body["toolProgressEventIds"] = tool_ids
        response = None
        if status == COMPLETED:
            response = events.message_created(
                actor=agent,
                content=outcome.content,
                to=[],
                correlation_id=turn.correlation_id,
                root_correlation_id=turn.root_correlation_id,
                source_kind="adapter",
                reply_to_event_id=turn.source_event_id,
                causation_id=turn_id,
                idempotency_key=f"turn:{turn_id}:response",
                extra_body={"turnId": turn_id},
            )
            terminal_body["responseEventId"] = response.event_id
            # Dated memory (PROTOCOL §2.2, FEATURES §15.3): a completed Turn registers its source and
            # reply ids in this same transaction; no memory record or event is written here.
            register_dated_memory_source(
                turn_id=turn_id,
                actor_id=turn.target_actor_id,
                command_type=turn.command_type,
                source_event_id=turn.source_event_id,
                source_seq=turn.source_seq,
                source_body=turn.source_body,
                response=response,
            )
        if outcome.error_code and status != COMPLETED:
            terminal_body["errorCode"] = outcome.error_code
            if outcome.message:
                terminal_body["message"] = outcome.message[:MESSAGE_CHARACTERS]
        terminal_body.update(outcome.terminal_facts)
        terminal = events.turn_event(
            event_type=event_types.TURN_TERMINALS[status],
            actor=agent if status == COMPLETED else events.SYSTEM,
            turn_id=turn_id,
            target_actor_id=turn.target_actor_id,
            correlation_id=turn.correlation_id,
            root_correlation_id=turn.root_correlation_id,
            body=terminal_body,
            idempotency_key=f"turn:{turn_id}:terminal",
        )
        now = timezone.now()
        # The status CAS and the terminal columns in one UPDATE. The write lock has been held since
        # the status was read above, so the CAS cannot fail in practice; if it ever does, raising
        # rolls back the events written above, exactly as if it had failed before them.
        check_move(turn.status, status)  # as move_turn does, before the fixed statement
        moved = turn_sql.finish_turn(
            turn_id,
            turn.status,
            status,
            response_event_id=response.event_id if response else None,
            terminal_event_id=terminal.event_id,
            error_code=outcome.error_code if status != COMPLETED else None,
            partial_text=outcome.content if status != COMPLETED else "",
            terminal_at=now,
        )
        if not moved:
            raise _TurnMoved
        if turn.attempt_id is not None:
            turn_sql.attempt_terminal(turn.attempt_id, now)
            if delivered and turn.context_through_seq is not None:  # the claim of every attempt sets it
                advance_delivery_cursor(turn.target_actor_id, turn.context_through_seq, turn.summary_through_seq)
    return status


def _turn_record(
    turn_id: str, turn: TerminalRead, agent: ActorRef, event_type: str, body: dict[str, Any], key: str
) -> Event:
    return events.turn_event(
        event_type=event_type,
        actor=agent,
        turn_id=turn_id,
        target_actor_id=turn.target_actor_id,
        correlation_id=turn.correlation_id,
        root_correlation_id=turn.root_correlation_id,
        body=body,
        idempotency_key=f"turn:{turn_id}:{key}",
        source_kind="adapter",
    )


def advance_delivery_cursor(actor_id: str, through_seq: int, summary_seq: int | None = None) -> None:
    if summary_seq is not None:
        # The delivered packet carried a room checkpoint: the cursor remembers the newest one the
        # agent has seen (FEATURES §7 step 7). Rare (once per compaction per agent): its own UPDATE.
        advance_summary_mark(actor_id, summary_seq)
    # The usual case, a row behind through_seq, is this one conditional UPDATE; only when it
    # matches nothing (no row yet, or the row is already at or past through_seq) is the row read
    # or created as before. Callers hold the write lock, so nothing moves in between.
    if memory_sql.advance_delivery_cursor(actor_id=actor_id, room_id=ROOM_ID, through_seq=through_seq):
        return
    cursor, _ = DeliveryCursor.objects.get_or_create(actor_id=actor_id, room_id=ROOM_ID)
    if through_seq > cursor.last_delivered_seq:
        DeliveryCursor.objects.filter(pk=cursor.pk, last_delivered_seq__lt=through_seq).update(
            last_delivered_seq=through_seq
        )


def advance_summary_mark(actor_id: str, summary_seq: int) -> None:
    cursor, _ = DeliveryCursor.objects.get_or_create(actor_id=actor_id, room_id=ROOM_ID)
    DeliveryCursor.objects.filter(pk=cursor.pk, last_summary_seq__lt=summary_seq).update(last_summary_seq=summary_seq)


def delivery_cursor(actor_id: str) -> int:
    # One row at most (unique per actor and room): no ordering needed.
    return (
        next(
            iter(
                DeliveryCursor.objects.filter(actor_id=actor_id, room_id=ROOM_ID).values_list(
                    "last_delivered_seq", flat=True
                )
            ),
            None,
        )
        or 0
    )


# ---- cancel ---------------------------------------------------------------------------------


def request_cancel(turn_id: str) -> tuple[bool, str]:
    """(accepted, status) for PROTOCOL §10.3. A queued Turn is cancelled at once; an in-flight one
    moves to ``cancelling`` and the lane sends the native cancel after commit."""
    with transaction.atomic():
        turn = Turn.objects.get(turn_id=turn_id)
        if turn.status in TERMINAL_STATUSES:
            return False, turn.status
        if turn.status == CANCELLING:
            return True, CANCELLING
        if turn.status == QUEUED:  # the write lock is held: the status just read cannot change
            _finish_undispatched(turn, CANCELLED)
            outcome = (True, CANCELLED)
        else:
            move_turn(turn_id, turn.status, CANCELLING)  # dispatching or running
            wakeups.cancel_on_commit(turn_id)
            outcome = (True, CANCELLING)
        # A parent that stops no longer waits for its synchronous asks (PROTOCOL §6.3); its
        # asynchronous sends are independent work and go on.
        for child_id in (
            Turn.objects.filter(parent_turn_id=turn_id, command_type="mcp.ask")
            .exclude(status__in=TERMINAL_STATUSES)
            .values_list("turn_id", flat=True)
        ):
            request_cancel(child_id)
        return outcome


# ---- restart recovery -------------------------------------------------------------------------


def recover_after_restart(only: Collection[str] | None = None, besides: Collection[str] = ()) -> dict[str, int]:
    """PROTOCOL §5 on start: only ``prepared + not_delivered`` goes back to the queue; a
    ``cancelling`` one that never reached the CLI is cancelled; anything that may have been
    delivered is ``interrupted`` with its partial text kept. Nothing is ever re-sent. A worker
    that takes some agents recovers the Turns of those (``only``); the room's lease, those of
    every target but ``besides`` (docs/DECISIONS.md D58)."""
    in_flight = Turn.objects.filter(status__in=[DISPATCHING, RUNNING, CANCELLING]).exclude(target_actor_id__in=besides)
    if only is not None:
        in_flight = in_flight.filter(target_actor_id__in=only)
    return _recover(in_flight)


def recover_agent_turns(actor_id: str, **facts: Any) -> dict[str, int]:
    """One agent's CLI was replaced while GroupX runs (an agent restart, docs/DECISIONS.md D41): its
    in-flight Turn meets the rules of a restart of the room; ``facts`` join an interrupted Turn's
    terminal body (``reason``). Its queued Turns are left as they are."""
    return _recover(Turn.objects.filter(target_actor_id=actor_id, status__in=[DISPATCHING, RUNNING, CANCELLING]), facts)


def _recover(in_flight_turns: QuerySet[Turn], facts: dict[str, Any] | None = None) -> dict[str, int]:
    counts = {"requeued": 0, "cancelled": 0, "interrupted": 0, "failed": 0}
    for turn in list(in_flight_turns.order_by("enqueue_seq")):
        attempt = turn.attempts.exclude(dispatch_phase="terminal").order_by("-claimed_at").first()
        never_sent = attempt is None or (
            attempt.dispatch_phase == "prepared" and attempt.delivery_certainty == "not_delivered"
        )
        claim_ = (
            Claim(
                turn.turn_id,
                attempt.attempt_id,
                turn.target_actor_id,
                turn.source_event_id,
                turn.correlation_id,
                turn.root_correlation_id,
            )
            if attempt
            else None
        )
        # Only a dispatching Turn may go back to the queue (the table); a running one has had its
        # first native event, so its prompt was delivered whatever its attempt row says.
        if never_sent and can_move(turn.status, QUEUED) and turn.transport != SELECTED_TRANSPORT:
            # PROTOCOL §2.1: a snapshot taken under another transport is never switched over.
            finish(
                claim_,
                turn.turn_id,
                TurnOutcome(
                    status=FAILED,
                    error_code=TRANSPORT_MODE_MISMATCH,
                    message=f"this Turn was prepared for the {turn.transport!r} transport, and GroupX now runs "
                    f"{SELECTED_TRANSPORT!r}; it is never sent over another transport",
                ),
                events.SYSTEM,
            )
            counts["failed"] += 1
        elif never_sent and can_move(turn.status, QUEUED):
            with transaction.atomic():
                if attempt is not None:
                    TurnAttempt.objects.filter(attempt_id=attempt.attempt_id).update(
                        dispatch_phase="terminal", terminal_at=timezone.now()
                    )
                move_turn(turn.turn_id, turn.status, QUEUED, binding_id=None)
            counts["requeued"] += 1
        elif never_sent and turn.status == CANCELLING:
            finish(claim_, turn.turn_id, TurnOutcome(status=CANCELLED), events.SYSTEM)
            counts["cancelled"] += 1
        else:
            finish(
                claim_,
                turn.turn_id,
                TurnOutcome(
                    status=INTERRUPTED,
                    content=turn.partial_text,
                    error_code=TURN_INTERRUPTED,
                    terminal_facts=dict(facts or {}),
                ),
                events.SYSTEM,
            )
            counts["interrupted"] += 1
    return counts


def fail_queued_for_absent_agents(live_actor_ids: set[str]) -> int:
    """On start, after the recovery above: a Turn queued for an agent that the config no longer runs
    (disabled, or removed from groupx.json) would wait for a lane that never comes, and would count
    in health and bootstrap for ever. It fails visibly with the code a new message to that agent
    gets (FEATURES §21.14; docs/DECISIONS.md D38). Returns how many."""
    failed = 0
    orphans = Turn.objects.filter(status=QUEUED).exclude(target_actor_id__in=live_actor_ids).order_by("enqueue_seq")
    for turn in orphans:
        with transaction.atomic():
            _finish_undispatched(
                turn,
                FAILED,
                UNKNOWN_TARGET,
                f"{turn.target_actor_id} is not running: it was disabled or removed from "
                "groupx.json before this Turn could start",
            )
        failed += 1
    return failed


def requeue_if_never_sent(turn_id: str) -> bool:
    """A Turn claimed (``dispatching + prepared + not_delivered``) whose write-ahead a store fault
    stopped goes back to the queue, as restart recovery would put it (docs/DECISIONS.md D24)."""
    with transaction.atomic():
        turn = Turn.objects.filter(turn_id=turn_id, status=DISPATCHING).first()
        if turn is None:
            return False
        attempt = turn.attempts.exclude(dispatch_phase="terminal").order_by("-claimed_at").first()
        if attempt is not None and (attempt.dispatch_phase, attempt.delivery_certainty) != (
            "prepared",
            "not_delivered",
        ):
            return False
        if attempt is not None:
            TurnAttempt.objects.filter(attempt_id=attempt.attempt_id).update(
                dispatch_phase="terminal", terminal_at=timezone.now()
            )
        move_turn(turn_id, DISPATCHING, QUEUED, binding_id=None)
    return True


def fail_queued_head(turn_id: str, error_code: str, message: str = "") -> bool:
    """A queued Turn that cannot be sent (its agent could not start, its context does not fit):
    it fails visibly instead of waiting forever."""
    with transaction.atomic():
        turn = Turn.objects.filter(turn_id=turn_id, status=QUEUED).first()
        if turn is None:
            return False
        _finish_undispatched(turn, FAILED, error_code, message)
    return True


def _finish_undispatched(turn: Turn, status: str, error_code: str | None = None, message: str = "") -> None:
    """A Turn that never reached a CLI ends here; caller holds the write lock, status is queued."""
    body: dict[str, Any] = {"status": status, "dispatched": False}
    if error_code:
        body["errorCode"] = error_code
        if message:
            body["message"] = message[:MESSAGE_CHARACTERS]
    terminal = events.turn_event(
        event_type=event_types.TURN_TERMINALS[status],
        actor=events.SYSTEM,
        turn_id=turn.turn_id,
        target_actor_id=turn.target_actor_id,
        correlation_id=turn.correlation_id,
        root_correlation_id=turn.root_correlation_id,
        body=body,
        idempotency_key=f"turn:{turn.turn_id}:terminal",
    )
    move_turn(
        turn.turn_id,
        QUEUED,
        status,
        error_code=error_code,
        terminal_at=timezone.now(),
        terminal_event_id=terminal.event_id,
    )


def lanes_with_work() -> list[str]:
    return list(Turn.objects.filter(status=QUEUED).values_list("target_actor_id", flat=True).distinct())


def cancelling_turn_ids() -> list[str]:
    return list(Turn.objects.filter(status=CANCELLING).values_list("turn_id", flat=True))

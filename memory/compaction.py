"""The Room Context Engine's compaction (FEATURES §14, PROTOCOL §10.5).

Older room context messages are rolled into a new **cumulative** checkpoint summary by the first
healthy enabled agent in config order, asked through the registered summariser
(``memory.summariser``; the agents layer runs it in a short-lived, MCP-free CLI session); on a
failure or an invalid answer the next agent is tried. Transient start/handshake/session/timeout
errors get up to 3 attempts from a 300 ms backoff. A valid summary (non-empty, ≤ max(1,024,
min(8,000, maxChars/4))) is swapped in by compare-and-set: the single active summary is still the
one the plan started from and the reset floor has not moved; otherwise nothing changes. A failure
leaves the transcript, the active summary and every cursor untouched.

Progress goes out as transient ``context.compaction.started|retrying|completed|failed`` events:
operation ids, seqs, counts and codes, never the prompt or the summary text.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from groupx_site.core.ids import new_id
from groupx_site.store import db
from memory import dated
from memory import sql as memory_sql
from memory.models import Summary
from memory.summariser import Summariser, SummariserError, SummaryRequest, is_ready, summariser
from memory.transcript import entry, uncompacted_after
from rooms import event_types, events, system_errors
from rooms.models import ROOM_ID
from setup_wizard import roster
from setup_wizard.config import ResolvedAgent

logger = logging.getLogger("groupx.memory.compaction")
MAX_ATTEMPTS, BACKOFF_SECONDS = 3, 0.3
COMPACTION_CONDITION = "room.summary"  # its public system.error (rooms/system_errors.py)
STORE_CAP = 32_768
# Rows per read of the log while planning: a pass of ordinary messages takes ~1,000 of them (the input
# budget), so a few reads, each bounded, whatever the length of the uncompacted history.
WINDOW = 200
END_OF_LOG = 2**63 - 1  # above every seq (a signed 64-bit integer on both engines)
_lock: asyncio.Lock | None = None


# What a failed compaction carries, and so what ``POST /api/context/compact`` answers 503 with: the
# codes a summariser's CLI session fails with (it starts fresh, never resumes, and has no MCP:
# ``agents/cli_summariser.py``), a wrong answer, and a checkpoint that moved under it.
FAILURE_CODES = (
    "ADAPTER_NOT_FOUND",
    "ADAPTER_START_FAILED",
    "PROTOCOL_HANDSHAKE_TIMEOUT",
    "PROTOCOL_INVALID_MESSAGE",
    "SESSION_NOT_AVAILABLE",
    "TURN_FIRST_EVENT_TIMEOUT",
    "TURN_IDLE_TIMEOUT",
    "TURN_CANCEL_TIMEOUT",
    "TURN_INTERRUPTED",
    "UNEXPECTED_NATIVE_INTERACTION",
    "NATIVE_POLICY_BLOCKED",
    "MESSAGE_TOO_LARGE",
    "STORE_CONFLICT",
)


class CompactionFailed(Exception):
    def __init__(self, code: str, message: str):
        if code not in FAILURE_CODES:
            # A session failure outside the table (a driver's new code): still a session that gave
            # no summary, and the answer stays one the route documents; the message keeps the code.
            code, message = "SESSION_NOT_AVAILABLE", f"{message} ({code})"
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Plan:
    expected_summary_id: str | None
    expected_floor: int
    from_seq: int
    through_seq: int
    message_count: int
    prompt: str


def summary_cap(max_chars: int) -> int:
    return max(1_024, min(8_000, max_chars // 4))


def input_budget(max_chars: int, previous: int) -> int:
    return max(40_000, min(max_chars, 120_000)) - previous


def _uncompacted(after_seq: int, before_seq: int) -> Iterator[dict]:
    """Room context with after_seq < seq < before_seq, oldest first, read a window at a time: the
    caller stops at its budget, and what it does not take is never read."""
    while window := memory_sql.context_window(room_id=ROOM_ID, after_seq=after_seq, before_seq=before_seq, size=WINDOW):
        yield from window
        if len(window) < WINDOW:
            return
        after_seq = window[-1]["seq"]


def plan_compaction(*, through_seq: int | None = None, keep_last: int = 0) -> Plan | None:
    """What the next pass would roll up: the uncompacted messages up to ``through_seq`` (automatic)
    or all but the newest ``keep_last`` (manual), oldest first, within the input budget. It runs on
    the writer thread, so it reads the log in bounded windows and stops at the budget (D62)."""
    lower, summary, floor = uncompacted_after()
    if through_seq is not None:
        before = through_seq + 1
    elif keep_last:
        # Everything below the keep_last-th newest message; none of it when there are not that many.
        before = memory_sql.context_seq_from_newest(
            room_id=ROOM_ID, after_seq=lower, before_seq=END_OF_LOG, offset=keep_last - 1
        )
        if before is None:
            return None
    else:
        before = END_OF_LOG
    return plan_from(_uncompacted(lower, before), summary, floor)


def plan_from(messages: Iterable[dict], summary: Summary | None, floor: int) -> Plan | None:
    """The plan over ``messages`` (entry dicts, oldest first), taken until the input budget is spent:
    the rest of the iterable is never pulled."""
    max_chars = settings.GROUPX_CONFIG.limits.contextCharacters
    room = input_budget(max_chars, len(summary.content) if summary else 0)
    blocks: list[str] = []
    seqs: list[int] = []
    for event in messages:
        block = entry(event)
        if blocks and len(block) + 1 > room:
            break  # the rest waits for the next pass
        blocks.append(block[: max(room, 1_024)])
        seqs.append(event["seq"])
        room -= len(blocks[-1]) + 1
    if not blocks:
        return None
    cap = summary_cap(max_chars)
    through = seqs[-1]
    first = summary.from_seq if summary else seqs[0]
    prompt = "\n\n".join(
        [
            "[groupx_room_compaction]\n"
            f"room: {ROOM_ID}\n"
            f"covers_seq: {first}..{through}\n"
            "task: You write the running checkpoint summary of a group chat between a person and several AI "
            "agents. Combine the previous summary with the messages below into one new cumulative summary that "
            "replaces both. Keep decisions, agreed facts, open questions and tasks, who asked or owns what "
            f"(with actor ids) and ids worth citing. At most {cap} characters of plain text.",
            f"[previous_summary]\n{summary.content if summary else '(none yet)'}",
            "[messages]\n" + "\n".join(blocks),
            f"[current_message]\nWrite the new cumulative summary now, at most {cap} characters. Answer with the "
            "summary text only.",
        ]
    )
    return Plan(summary.summary_id if summary else None, floor, first, through, len(blocks), prompt)


def commit_summary(plan: Plan, text: str, generator_actor_id: str) -> bool:
    """Compare-and-set: swap in the new summary only if the checkpoint is still the planned one."""
    with transaction.atomic():
        _lower, summary, floor = uncompacted_after()
        if (summary.summary_id if summary else None) != plan.expected_summary_id or floor != plan.expected_floor:
            return False
        # Also retires an active summary left at or below the reset floor.
        Summary.objects.filter(room_id=ROOM_ID, status="active").update(status="superseded")
        Summary.objects.create(
            summary_id=new_id("sum"),
            room_id=ROOM_ID,
            from_seq=plan.from_seq,
            through_seq=plan.through_seq,
            content=text[:STORE_CAP],
            generator_actor_id=generator_actor_id,
            status="active",
            created_at=timezone.now(),
        )
        system_errors.resolve(COMPACTION_CONDITION, "The room's summary is written again.")  # if it had failed
    return True


def summarisers(require_healthy: bool) -> list[ResolvedAgent]:
    """Enabled agents in config order; in the server only those whose session is up."""
    agents = roster.live_agents()
    if require_healthy:
        agents = [a for a in agents if is_ready(a.actor_id)]
    return agents


def _progress(kind: str, operation_id: str, operation: str, plan: Plan, **body) -> None:
    events.publish_transient(
        event_type=event_types.COMPACTION_PROGRESS[kind],
        actor=events.SYSTEM,
        correlation_id=f"context:{operation_id}",
        body={
            "operationId": operation_id,
            "operation": operation,
            "fromSeq": plan.from_seq,
            "throughSeq": plan.through_seq,
            "messageCount": plan.message_count,
            **body,
        },
    )


def _lock_for_loop() -> asyncio.Lock:
    global _lock
    if _lock is None:
        _lock = asyncio.Lock()
    return _lock


async def compact_once(
    *, operation: str, through_seq: int | None = None, keep_last: int = 0, require_healthy: bool = True
) -> bool:
    """One pass. True when a new summary was swapped in, False when there was nothing to compact.
    Raises CompactionFailed. Single flight: one pass at a time in this process."""
    async with _lock_for_loop():
        plan = await db.write(plan_compaction)(through_seq=through_seq, keep_last=keep_last)
        if plan is None:
            return False
        writer = summariser()  # no summariser registered is a wiring mistake: it raises NoSummariser
        await dated.flush_through(plan.through_seq)  # dated memory first reads what is about to be passed
        operation_id = new_id("cmp")
        _progress("started", operation_id, operation, plan)
        cap = summary_cap(settings.GROUPX_CONFIG.limits.contextCharacters)
        code = "SESSION_NOT_AVAILABLE"
        for agent in summarisers(require_healthy):
            text, code = await _summarise(writer, agent, plan, operation_id, operation)
            if text is None:
                continue
            if not text or len(text) > cap:
                code = "PROTOCOL_INVALID_MESSAGE"  # empty or oversized: the next agent, no retry
                continue
            if not await db.write(commit_summary)(plan, text, agent.actor_id):
                _progress("failed", operation_id, operation, plan, errorCode="STORE_CONFLICT")
                raise CompactionFailed("STORE_CONFLICT", "the checkpoint changed while the summary was written")
            _progress("completed", operation_id, operation, plan, generatorActorId=agent.actor_id)
            return True
        _progress("failed", operation_id, operation, plan, errorCode=code)
        # Public once until a compaction works (PROTOCOL §14, D89): the packets keep the older summary.
        await db.write(system_errors.report)(
            COMPACTION_CONDITION,
            code,
            (
                f"No agent could write the room's summary ({code}); agents get the older summary and the "
                "recent messages until a compaction works."
            ),
        )
        raise CompactionFailed(code, "no agent produced a valid summary; the active summary is unchanged")


async def _summarise(
    writer: Summariser, agent: ResolvedAgent, plan: Plan, operation_id: str, operation: str
) -> tuple[str | None, str]:
    request = SummaryRequest.of(
        agent,
        plan.prompt,
        purpose="compaction",
        max_characters=summary_cap(settings.GROUPX_CONFIG.limits.contextCharacters),
    )
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            return (await writer.summarise(request)).strip(), ""
        except SummariserError as error:
            logger.info("compaction by %s failed (attempt %s): %s", agent.actor_id, attempt, error.code)
            if not error.transient or attempt == MAX_ATTEMPTS:
                return None, error.code
            delay = BACKOFF_SECONDS * 2 ** (attempt - 1)
            _progress(
                "retrying",
                operation_id,
                operation,
                plan,
                attempt=attempt,
                maxAttempts=MAX_ATTEMPTS,
                nextDelayMs=int(delay * 1000),
                errorCode=error.code,
                generatorActorId=agent.actor_id,
            )
            await asyncio.sleep(delay)
    return None, "SESSION_NOT_AVAILABLE"

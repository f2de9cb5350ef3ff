"""Agent dated memory: the daily rollup (FEATURES §15.3).

A pending batch per (room, agent, local date) is due when it holds 8 Turns or 16,000 characters
and has been quiet for 5 minutes, when its date is over, when its failure backoff has run out, or
when a room compaction is about to pass its sources (``flush_through``). The rollup runs in the
**owning** agent's short-lived, MCP-free session, asked through the registered summariser
(``memory.summariser``); the output (≤ 8,000 characters) becomes that day's single active dated
record: the first batch writes ``memory.remembered``, later batches supersede it by
compare-and-set. The sentinel ``GROUPX_NO_DATED_MEMORY`` (or an empty answer) only advances the
checkpoint. A failure never touches business Turns: it is retried at once for transient errors
(3 attempts from 500 ms), then persisted with a backoff of 60 s × 2^min(failures, 4), at most
15 minutes.

The quiet period and backoff base can be shortened with ``GROUPX_DATED_MEMORY_QUIET_MS`` and
``GROUPX_DATED_MEMORY_BACKOFF_MS`` (tests; the product defaults are the numbers above).
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.db import transaction
from django.db.models import Count, Max, Min, Sum
from django.utils import timezone

from groupx_site.store import db
from memory.actions import do_remember_memory, do_supersede_memory
from memory.dated_sources import local_date
from memory.models import DatedMemoryRollup, DatedMemorySource, MemoryRecord
from memory.records import Writer
from memory.summariser import SummariserError, SummaryRequest, summariser
from rooms import system_errors
from rooms.events import ActorRef
from rooms.models import ROOM_ID, Event
from setup_wizard import roster
from setup_wizard.config import ResolvedAgent

logger = logging.getLogger("groupx.memory.dated")
SENTINEL = "GROUPX_NO_DATED_MEMORY"
BATCH_TURNS, BATCH_CHARS = 8, 16_000
OUTPUT_CHARS = 8_000
SOURCE_CAP, INPUT_CAP = 32_768, 120_000
IMMEDIATE_ATTEMPTS, IMMEDIATE_BACKOFF = 3, 0.5
BACKOFF_CAP_SECONDS = 15 * 60
INVALID_OUTPUT = "PROTOCOL_INVALID_MESSAGE"
_locks: dict[tuple[str, date], asyncio.Lock] = {}


def _ms_env(name: str, default: int) -> float:
    return int(os.environ.get(name, default)) / 1000


def quiet_period() -> timedelta:
    return timedelta(seconds=_ms_env("GROUPX_DATED_MEMORY_QUIET_MS", 300_000))


def backoff(failures: int) -> timedelta:
    base = _ms_env("GROUPX_DATED_MEMORY_BACKOFF_MS", 60_000)
    return timedelta(seconds=min(BACKOFF_CAP_SECONDS, base * 2 ** min(failures, 4)))


def _db(fn):
    return db.write(fn)


# ---- when ----------------------------------------------------------------------------------------


def is_due(rollup: DatedMemoryRollup, now: datetime) -> bool:
    if rollup.pending_turns <= 0:
        return False
    if rollup.next_attempt_at is not None:
        return rollup.next_attempt_at <= now  # a failed batch comes back when its backoff ends
    if rollup.local_date < local_date(now):
        return True
    full = rollup.pending_turns >= BATCH_TURNS or rollup.pending_chars >= BATCH_CHARS
    return full and rollup.last_pending_at is not None and rollup.last_pending_at <= now - quiet_period()


def due_batches() -> list[tuple[str, date]]:
    now = timezone.now()
    rows = DatedMemoryRollup.objects.filter(room_id=ROOM_ID, pending_turns__gt=0).order_by("local_date", "actor_id")
    return [(r.actor_id, r.local_date) for r in rows if is_due(r, now)]


def batches_through(seq: int) -> list[tuple[str, date]]:
    """Batches with a pending source at or below ``seq`` (what a compaction is about to pass)."""
    rows = (
        DatedMemorySource.objects.filter(room_id=ROOM_ID, processed_at__isnull=True, source_seq__lte=seq)
        .values_list("actor_id", "local_date")
        .distinct()
    )
    return sorted(set(rows))


# ---- what ----------------------------------------------------------------------------------------


@dataclass
class Batch:
    actor_id: str
    day: date
    turn_ids: list[str]
    through_seq: int
    previous_memory_id: str | None
    prompt: str


def _capped(text: str) -> str:
    return text if len(text) <= SOURCE_CAP else text[:SOURCE_CAP] + "\n[…truncated]"


def load_batch(agent: ResolvedAgent, day: date) -> Batch | None:
    """The pending sources (in order, ≤ 120,000 characters of text) and the day's current record."""
    sources = list(
        DatedMemorySource.objects.filter(
            room_id=ROOM_ID, actor_id=agent.actor_id, local_date=day, processed_at__isnull=True
        ).order_by("response_seq")
    )
    if not sources:
        return None
    ids = [s.source_event_id for s in sources] + [s.response_event_id for s in sources]
    texts = {
        e["event_id"]: e for e in Event.objects.filter(event_id__in=ids).values("event_id", "seq", "actor_id", "body")
    }
    rollup = DatedMemoryRollup.objects.filter(room_id=ROOM_ID, actor_id=agent.actor_id, local_date=day).first()
    previous = (
        MemoryRecord.objects.filter(memory_id=rollup.memory_id, status="active").first()
        if rollup and rollup.memory_id
        else None
    )
    taken, blocks, total = [], [], 0
    for source in sources:
        pair = []
        for label, event_id in (("message", source.source_event_id), ("your_reply", source.response_event_id)):
            event = texts.get(event_id) or {"seq": "?", "actor_id": "?", "body": {}}
            pair.append(
                f"- {label} id={event_id} seq={event['seq']} author={event['actor_id']}\n"
                f"{_capped(str((event['body'] or {}).get('content', '')))}"
            )
        block = "\n".join(pair)
        if taken and total + len(block) > INPUT_CAP:
            break  # the rest stays pending for the next batch
        taken.append(source)
        blocks.append(block)
        total += len(block)
    prompt = "\n\n".join(
        [
            "[groupx_dated_memory]\n"
            f"agent: {agent.actor_id} ({agent.display_name})\n"
            f"date: {day.isoformat()}\n"
            "task: You keep a short dated working memory for yourself in this GroupX room. Merge the previous "
            "memory for this date with the exchanges below into one updated note: decisions, facts learned, "
            "commitments and open questions worth remembering later. Leave out small talk. "
            f"At most {OUTPUT_CHARS} characters. If nothing is worth keeping, answer exactly {SENTINEL}.",
            f"[previous_dated_memory]\n{previous.content if previous else '(none yet)'}",
            "[exchanges]\n" + "\n\n".join(blocks),
            f"[current_message]\nWrite the updated dated memory for {day.isoformat()} now. Answer with the note "
            f"text only, or {SENTINEL}.",
        ]
    )
    return Batch(
        agent.actor_id,
        day,
        [s.turn_id for s in taken],
        max(s.response_seq for s in taken),
        previous.memory_id if previous else None,
        prompt,
    )


# ---- commit --------------------------------------------------------------------------------------


def _recount(rollup: DatedMemoryRollup) -> dict:
    left = DatedMemorySource.objects.filter(
        room_id=ROOM_ID, actor_id=rollup.actor_id, local_date=rollup.local_date, processed_at__isnull=True
    )
    agg = left.aggregate(
        n=Count("turn_id"),
        chars=Sum("source_chars"),
        top=Max("response_seq"),
        first=Min("terminal_at"),
        last=Max("terminal_at"),
    )
    return {
        "pending_turns": agg["n"],
        "pending_chars": agg["chars"] or 0,
        "pending_through_seq": agg["top"] or 0,
        "first_pending_at": agg["first"],
        "last_pending_at": agg["last"],
    }


def commit(agent: ResolvedAgent, batch: Batch, text: str | None) -> str | None:
    """One transaction: the day's record (or none, for the sentinel), the sources marked processed
    and the checkpoint advanced. Returns the active dated memory id."""
    now = timezone.now()
    with transaction.atomic():
        rollup = DatedMemoryRollup.objects.get(room_id=ROOM_ID, actor_id=batch.actor_id, local_date=batch.day)
        memory_id = rollup.memory_id
        if text is not None:
            writer = Writer(None, ActorRef(agent.actor_id, "agent", agent.display_name), "automatic_rollup")
            current = (
                MemoryRecord.objects.filter(memory_id=rollup.memory_id, status="active").first()
                if rollup.memory_id
                else None
            )
            record = (
                do_supersede_memory(writer, current, kind="note", content=text, source_event_id=None)
                if current
                else None
            )
            if record is None:  # the first batch of the day, or the user retracted the day's record
                record = do_remember_memory(
                    writer,
                    scope_type="agent",
                    scope_id=agent.actor_id,
                    agent_memory_type="dated",
                    kind="note",
                    content=text,
                    subject_actor_id=agent.actor_id,
                    source_event_id=None,
                )
            memory_id = record.memory_id
        DatedMemorySource.objects.filter(turn_id__in=batch.turn_ids, processed_at__isnull=True).update(
            processed_at=now, memory_id=memory_id if text is not None else None
        )
        DatedMemoryRollup.objects.filter(pk=rollup.pk).update(
            memory_id=memory_id,
            summarized_through_seq=max(rollup.summarized_through_seq, batch.through_seq),
            failure_count=0,
            last_attempt_at=now,
            next_attempt_at=None,
            last_error_code=None,
            **_recount(rollup),
        )
        system_errors.resolve(_condition(batch.actor_id), f"{agent.display_name}'s dated memory is written again.")
    return memory_id


def _condition(actor_id: str) -> str:
    return f"memory.dated:{actor_id}"


def record_failure(actor_id: str, day: date, code: str) -> None:
    now = timezone.now()
    with transaction.atomic():
        rollup = DatedMemoryRollup.objects.get(room_id=ROOM_ID, actor_id=actor_id, local_date=day)
        DatedMemoryRollup.objects.filter(pk=rollup.pk).update(
            failure_count=rollup.failure_count + 1,
            last_attempt_at=now,
            last_error_code=code[:64],
            next_attempt_at=now + backoff(rollup.failure_count),
        )
        agent = roster.live_agent(actor_id)
        name = agent.display_name if agent is not None else actor_id
        # Public once (PROTOCOL §14, D89): the retries that fail again write nothing more.
        system_errors.report(
            _condition(actor_id),
            code,
            (
                f"{name}'s dated memory for {day.isoformat()} could not be written ({code}); "
                "GroupX tries again later and nothing of the day is lost."
            ),
            actor_id=actor_id,
        )


# ---- run -----------------------------------------------------------------------------------------


async def roll_up(actor_id: str, day: date) -> str:
    """Run one batch for (agent, day): ``written`` | ``skipped`` | ``failed`` | ``idle``. Never raises
    for the agent's own failures: they are persisted and retried later."""
    agent = roster.live_agent(actor_id)
    if agent is None:
        return "idle"  # a disabled or removed agent keeps its pending sources for later
    lock = _locks.setdefault((actor_id, day), asyncio.Lock())
    async with lock:
        batch = await _db(load_batch)(agent, day)
        if batch is None:
            return "idle"
        try:
            text = await _generate(agent, batch)
        except SummariserError as error:
            logger.info("%s: dated memory for %s failed: %s", actor_id, day, error.code)
            await _db(record_failure)(actor_id, day, error.code)
            return "failed"
        await _db(commit)(agent, batch, text)
        return "skipped" if text is None else "written"


async def _generate(agent: ResolvedAgent, batch: Batch) -> str | None:
    writer = summariser()  # no summariser registered is a wiring mistake: it raises NoSummariser
    request = SummaryRequest.of(agent, batch.prompt, purpose="dated-memory", max_characters=OUTPUT_CHARS)
    for attempt in range(1, IMMEDIATE_ATTEMPTS + 1):
        try:
            text = (await writer.summarise(request)).strip()
            break
        except SummariserError as error:
            if not error.transient or attempt == IMMEDIATE_ATTEMPTS:
                raise
            await asyncio.sleep(IMMEDIATE_BACKOFF * 2 ** (attempt - 1))
    if not text or text == SENTINEL:
        return None
    if len(text) > OUTPUT_CHARS:
        raise SummariserError(INVALID_OUTPUT, f"the dated memory has {len(text)} characters; at most {OUTPUT_CHARS}")
    return text


async def run_due() -> None:
    for actor_id, day in await _db(due_batches)():
        await roll_up(actor_id, day)


async def flush_through(seq: int) -> None:
    """Best effort before a compaction passes ``seq``: roll up every batch with sources there."""
    for actor_id, day in await _db(batches_through)(seq):
        try:
            await roll_up(actor_id, day)
        except Exception:  # a flush must never stop the compaction that asked for it
            logger.exception("dated memory flush for %s %s failed", actor_id, day)

"""The Room Context Engine's entry points (FEATURES §14, PROTOCOL §10.5).

- ``packet_if_it_fits`` / ``prepare_packet``: what a lane builds before a claim; ``checkpoint_moved``:
  whether a packet built earlier (``prepare_packet`` runs outside the claim's call) is stale. The packet is first built at the soft
  target (75%); if unread messages would be left out, the older history is compacted and the
  packet rebuilt, up to 8 passes. When nothing (more) is compactable the packet may use the full
  hard ceiling. A failed compaction fails the Turn with CONTEXT_BUDGET_EXCEEDED and changes
  nothing: history is never trimmed silently.
- ``compact_command``: ``POST /api/context/compact`` (and ``manage.py compact_context``): keep the
  last 12 messages verbatim, roll up the rest; single flight per (binding, clientCommandId).
- ``reset_context``: move the context floor to the current high-water mark (and, asked to, close
  every agent's native session: ``memory.native_reset``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from django.conf import settings
from django.utils import timezone

from groupx_site.core.errors import GroupXError
from groupx_site.core.ids import new_id
from groupx_site.store import db
from memory import native_reset
from memory.actions import run_as
from memory.compaction import CompactionFailed, compact_once
from memory.context import (
    ContextBudgetExceeded,
    ContextPacket,
    PacketReads,
    build_context_packet,
    compose_packet,
    soft_target,
)
from memory.models import ContextReset, Summary
from memory.records import Writer
from memory.transcript import active_summary, context_events, high_water, reset_floor
from memory.usage import KEEP_LAST, usage
from rooms import commands, event_types, events, validation
from rooms.models import ROOM_ID
from setup_wizard.config import ResolvedAgent

MAX_PASSES = 8
_inflight: dict[tuple[str, str], asyncio.Future] = {}


def _db(fn):
    return db.write(fn)


def packet_if_it_fits(agent: ResolvedAgent, source_event_id: str) -> ContextPacket | None:
    """The usual case, in one synchronous call: the packet at the soft target when it leaves
    nothing out, or at the hard ceiling when it leaves out only memory and identity (nothing to
    compact: what ``prepare_packet`` would build, without building the soft packet again). None
    when older history must be compacted first (``prepare_packet``)."""
    hard = settings.GROUPX_CONFIG.limits.contextCharacters
    reads = PacketReads(agent, source_event_id)
    packet = compose_packet(reads, budget=soft_target(hard), count_omitted=False)
    if packet.newest_omitted_seq is not None:
        return None
    # The packet at the hard ceiling from the same reads: the probe read every unread message, and
    # the tables' one reads are kept (D71); only a group past those reads is read again.
    return packet if packet.omitted == 0 else compose_packet(reads, budget=hard)


def checkpoint_moved(packet: ContextPacket) -> bool:
    """Whether the room's checkpoint (its active summary, its reset floor) changed since ``packet``
    was read: another lane's compaction or a reset committed meanwhile, so the packet may carry a
    superseded summary or history now below the floor. On the writer thread, where both commit."""
    floor = reset_floor()
    summary = active_summary(floor)
    return (summary.summary_id if summary is not None else None, floor) != packet.checkpoint


async def prepare_packet(agent: ResolvedAgent, source_event_id: str) -> ContextPacket:
    hard = settings.GROUPX_CONFIG.limits.contextCharacters
    soft = soft_target(hard)
    for _ in range(MAX_PASSES):
        # A probe: used only if it leaves no unread message out, so what it leaves out is not counted.
        packet = await _db(build_context_packet)(agent, source_event_id, budget=soft, count_omitted=False)
        if packet.newest_omitted_seq is None:
            break
        try:
            if not await compact_once(operation="automatic", through_seq=packet.newest_omitted_seq):
                break
        except CompactionFailed as error:
            raise ContextBudgetExceeded(f"compaction failed ({error.code}); the room history is unchanged") from error
    else:
        packet = None
    if packet is not None and packet.omitted == 0:
        return packet
    return await _db(build_context_packet)(agent, source_event_id, budget=hard)


# ---- manual compaction ---------------------------------------------------------------------------


def check_compact(payload: Any) -> str:
    payload = validation.reject_sender_fields(payload)
    validation.reject_unknown_keys(payload, {"clientCommandId"})
    return validation.client_command_id(payload)


def _stored(binding_id: str, client_command_id: str) -> dict[str, Any] | None:
    return commands.stored_result(
        binding_id=binding_id, client_command_id=client_command_id, command_type="context.compact", canonical={}
    )


def _store(binding_id: str, client_command_id: str, compacted: bool) -> dict[str, Any]:
    # The compaction itself ran outside any transaction (it waits on a CLI); only its receipt is
    # a command. A concurrent twin that stored first wins: its result is replayed.
    return commands.run_once(
        binding_id=binding_id,
        client_command_id=client_command_id,
        command_type="context.compact",
        canonical={},
        run=lambda: {"compacted": compacted, "usage": usage()},
    )


async def compact_command(binding_id: str, payload: Any, *, require_healthy: bool = True) -> dict[str, Any]:
    return await accept_compact(binding_id, check_compact(payload), require_healthy=require_healthy)


async def accept_compact(binding_id: str, client_command_id: str, *, require_healthy: bool = True) -> dict[str, Any]:
    """``{compacted, usage}``; no summary text. A failure stores no receipt, so the same command
    can be tried again, and leaves the active summary as it was."""
    key = (binding_id, client_command_id)
    if key in _inflight:  # the same command is running: join it instead of compacting twice
        return await asyncio.shield(_inflight[key])
    stored = await _db(_stored)(binding_id, client_command_id)
    if stored is not None:
        return stored
    future = asyncio.get_running_loop().create_future()
    _inflight[key] = future
    try:
        compacted = False
        for _ in range(MAX_PASSES):
            if not await compact_once(operation="manual", keep_last=KEEP_LAST, require_healthy=require_healthy):
                break
            compacted = True
        result = await _db(_store)(binding_id, client_command_id, compacted)
        future.set_result(result)
        return result
    except CompactionFailed as error:
        failure = GroupXError(error.code, str(error), status=503)
        future.set_exception(failure)
        future.exception()  # joiners re-raise it; mark it retrieved for asyncio's bookkeeping
        raise failure from error
    finally:
        if not future.done():  # cancelled (shutdown): joiners stop waiting too
            future.cancel()
        _inflight.pop(key, None)


# ---- reset ---------------------------------------------------------------------------------------


def check_reset(payload: Any) -> tuple[str, bool]:
    """(clientCommandId, resetNativeSessions) of a well-formed reset body."""
    payload = validation.reject_sender_fields(payload)
    validation.reject_unknown_keys(payload, {"clientCommandId", "resetNativeSessions"})
    client_command_id = validation.client_command_id(payload)
    native = payload.get("resetNativeSessions", False)
    if type(native) is not bool:
        raise GroupXError("INVALID_ENVELOPE", "resetNativeSessions must be true or false")
    return client_command_id, native


def reset_context(binding_id: str, source_kind: str, payload: Any) -> dict[str, Any]:
    return accept_reset(binding_id, source_kind, check_reset(payload))


def accept_reset(
    binding_id: str, source_kind: str, checked: tuple[str, bool], *, actor: events.ActorRef = events.SYSTEM
) -> dict[str, Any]:
    """Move the floor to the high-water mark and retire the summaries under it. No-op
    (``reset: false``) when no room context message arrived since the last reset (and, for a
    native reset, the last reset already was one).

    ``resetNativeSessions: true`` also closes every agent's native session: after the commit the
    runtime is woken (``memory.native_reset``), each idle agent starts a fresh native session at
    once, a busy one after its running Turn, and no native session born before this reset is ever
    resumed (docs/DECISIONS.md D41). ``actor``: who asked, when it is not the system (the room
    assistant's ``context_reset``)."""
    client_command_id, native = checked

    def run() -> dict[str, Any]:
        floor = reset_floor()
        nothing_new = not context_events().filter(seq__gt=floor).exists()
        if nothing_new and (not native or native_reset.mark() == floor):
            return {"reset": False, "throughSeq": floor, "resetNativeSessions": native, "usage": usage()}
        top = high_water()
        ContextReset.objects.create(
            reset_id=new_id("rst"),
            room_id=ROOM_ID,
            through_seq=top,
            reset_native_sessions=native,
            created_at=timezone.now(),
        )
        Summary.objects.filter(room_id=ROOM_ID, status="active", through_seq__lte=top).update(status="superseded")
        events.append_event(
            event_type=event_types.CONTEXT_RESET,
            actor=actor,
            body={"throughSeq": top, "resetNativeSessions": native},
            correlation_id=new_id("corr"),
            idempotency_key=f"context.reset:{top}",
            provenance={
                "sourceKind": source_kind,
                **({} if actor is events.SYSTEM else {"authorActorId": actor.actor_id}),
            },
        )
        if native:
            native_reset.notify_on_commit()
        return {"reset": True, "throughSeq": top, "resetNativeSessions": native, "usage": usage()}

    writer = Writer(binding_id, events.SYSTEM, source_kind)
    return run_as(writer, client_command_id, "context.reset", {"resetNativeSessions": native}, run)

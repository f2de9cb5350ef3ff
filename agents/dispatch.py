"""The lane's database calls around a native prompt (docs/ARCHITECTURE.md "The dispatch path").

Reading the lane's head, building the Context Packet, claiming the Turn (``turn.dispatched``) and
the write-ahead ``prompt_invoked + unknown`` are four steps and two commits. Made one call on the
writer thread (``groupx_site.store.db``; ``claim_head``) they cost the lane one thread hand-off
instead of four; the commits stay separate, so restart recovery still sees the protocol's phases
(PROTOCOL §5). The terminal transaction reads the next head in its own call (``finish_then_head``),
so a lane whose queue is empty afterwards goes to sleep without another hand-off (D20, D60); a lane
whose session stays usable claims that head there too (``finish_then_claim``, D81).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError

from agents import fault_points
from memory import native_reset
from memory.context import ContextPacket
from memory.engine import checkpoint_moved, packet_if_it_fits
from setup_wizard.config import ResolvedAgent
from turns import lifecycle
from turns.lifecycle import Claim, TurnOutcome
from turns.models import Turn


@dataclass
class ReadyTurn:
    claim: Claim | None = None  # None: the Turn was cancelled before it could be claimed
    packet: ContextPacket | None = None
    invoked: bool = False  # False: cancelled between the claim and the write-ahead; never prompt it
    needs_compaction: bool = False  # the packet would leave messages out: compact first (async)


def claim_for_prompt(
    agent: ResolvedAgent,
    turn_id: str,
    source_event_id: str,
    *,
    binding_id: str,
    instance_id: str,
    packet: ContextPacket | None = None,
) -> ReadyTurn:
    """Claim ``turn_id`` with ``packet`` (built here when not given) and commit ``prompt_invoked``.

    A ``packet`` built before this call (``prepare_packet``, which awaits a compaction) is rebuilt
    here when the room's checkpoint moved since it was read: another lane's compaction or a reset
    committed in between, and the agent must not be prompted with the superseded summary. This
    call and those commits all run on the writer thread, so what is claimed is current."""
    # The fault tier stops the writer here, the Turn still queued, on the path production takes (D36).
    fault_points.reached_on_writer(fault_points.QUEUED, turn_id)  # test-only, inert (D36)
    if packet is not None and checkpoint_moved(packet):
        packet = None
    if packet is None:
        packet = packet_if_it_fits(agent, source_event_id)
        if packet is None:
            return ReadyTurn(needs_compaction=True)
    claim = lifecycle.claim(
        turn_id,
        binding_id=binding_id,
        instance_id=instance_id,
        context_through_seq=packet.through_seq,
        summary_through_seq=packet.summary_through_seq,
    )
    if claim is None:
        return ReadyTurn()
    fault_points.reached_on_writer(fault_points.BEFORE_WRITE_AHEAD, turn_id)  # test-only, inert (D36)
    return ReadyTurn(claim=claim, packet=packet, invoked=lifecycle.mark_prompt_invoked(claim))


@dataclass
class LaneHead:
    turn: Turn | None  # the oldest queued Turn of the lane, if any
    native_reset_mark: int  # memory.native_reset.mark(): newer than the session's, it is renewed first
    ready: ReadyTurn | None = None  # claim_head: ``turn`` already claimed for its prompt


def lane_head(actor_id: str) -> LaneHead:
    """What a lane reads before each Turn, in one call on the writer thread: its next Turn, and
    whether a native reset (perhaps written by another process) came after its session started."""
    return LaneHead(lifecycle.next_queued_turn(actor_id), native_reset.mark())


def claim_head(
    agent: ResolvedAgent, claiming: Any, *, session_reset_mark: int, binding_id: str, instance_id: str
) -> LaneHead:
    """``lane_head`` and, when the lane's usable session is not older than the native-reset mark,
    ``claim_for_prompt`` of that head in the same call. ``claiming`` is the lane's ``ActiveTurn``:
    its ``turn_id`` is set here before the claim, so a cancel from then on finds the lane's Turn
    (the cancel command runs on this same thread: before this call, the Turn is not the head;
    after it, the lane knows it). Raises what ``claim_for_prompt`` raises."""
    head = lane_head(agent.actor_id)
    turn = head.turn
    if turn is None or head.native_reset_mark > session_reset_mark:
        return head
    claiming.turn_id = turn.turn_id
    head.ready = claim_for_prompt(
        agent, turn.turn_id, turn.source_event_id, binding_id=binding_id, instance_id=instance_id
    )
    return head


def finish_then_head(claim: Claim | None, turn_id: str, outcome: TurnOutcome, actor, actor_id: str) -> LaneHead | None:
    """``lifecycle.finish``, then the lane's next head in the same call. The head is only a
    shortcut: when reading it fails, None (the lane reads it itself), never a second ``finish``."""
    lifecycle.finish(claim, turn_id, outcome, actor)
    try:
        return lane_head(actor_id)
    except (DatabaseError, sqlite3.Error):
        return None


def finish_then_claim(
    claim: Claim | None,
    turn_id: str,
    outcome: TurnOutcome,
    actor,
    agent: ResolvedAgent,
    claiming: Any,
    *,
    session_reset_mark: int,
    binding_id: str,
    instance_id: str,
) -> LaneHead:
    """``lifecycle.finish``, then ``claim_head`` in the same call (D81): the lane's next Turn is
    claimed in the finish's transaction when the calls share a commit, and one hand-off and one
    head read fewer either way. What the claim raises reaches the caller after the finish may
    have been written; the lane settles it (``Lane._finish_then_claim``)."""
    lifecycle.finish(claim, turn_id, outcome, actor)
    return claim_head(
        agent, claiming, session_reset_mark=session_reset_mark, binding_id=binding_id, instance_id=instance_id
    )

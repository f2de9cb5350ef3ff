"""The lane's one database call before a native prompt (docs/ARCHITECTURE.md "The dispatch path").

Building the Context Packet, claiming the Turn (``turn.dispatched``) and the write-ahead
``prompt_invoked + unknown`` are three steps and two commits. Made one call on the writer thread
(``groupx_site.core.db``) they cost the lane one thread hand-off instead of three; the commits stay
separate, so restart recovery still sees the protocol's phases (PROTOCOL §5).
"""

from __future__ import annotations

from dataclasses import dataclass

from agents import fault_points
from memory import native_reset
from memory.context import ContextPacket
from memory.engine import packet_if_it_fits
from setup_wizard.config import ResolvedAgent
from turns import lifecycle
from turns.lifecycle import Claim
from turns.models import Turn


@dataclass
class ReadyTurn:
    claim: Claim | None = None  # None: the Turn was cancelled before it could be claimed
    packet: ContextPacket | None = None
    invoked: bool = False  # False: cancelled between the claim and the write-ahead; never prompt it
    needs_compaction: bool = False  # the packet would leave messages out: compact first (async)


def claim_for_prompt(agent: ResolvedAgent, turn_id: str, source_event_id: str, *, binding_id: str,
                     instance_id: str, packet: ContextPacket | None = None) -> ReadyTurn:
    """Claim ``turn_id`` with ``packet`` (built here when not given) and commit ``prompt_invoked``."""
    if packet is None:
        packet = packet_if_it_fits(agent, source_event_id)
        if packet is None:
            return ReadyTurn(needs_compaction=True)
    claim = lifecycle.claim(turn_id, binding_id=binding_id, instance_id=instance_id,
                            context_through_seq=packet.through_seq,
                            summary_through_seq=packet.summary_through_seq)
    if claim is None:
        return ReadyTurn()
    fault_points.reached_on_writer(fault_points.BEFORE_WRITE_AHEAD, turn_id)  # test-only, inert (D36)
    return ReadyTurn(claim=claim, packet=packet, invoked=lifecycle.mark_prompt_invoked(claim))


@dataclass
class LaneHead:
    turn: Turn | None  # the oldest queued Turn of the lane, if any
    native_reset_mark: int  # memory.native_reset.mark(): newer than the session's, it is renewed first


def lane_head(actor_id: str) -> LaneHead:
    """What a lane reads before each Turn, in one call on the writer thread: its next Turn, and
    whether a native reset (perhaps written by another process) came after its session started."""
    return LaneHead(lifecycle.next_queued_turn(actor_id), native_reset.mark())

"""A Context Packet built before another lane's compaction moved the room's checkpoint is rebuilt
before its prompt is sent (FEATURES §14; ``dispatch.claim_for_prompt``, ``Lane._run_turn``).

A lane whose packet needs a compaction builds it outside the claim's writer call
(``memory.engine.prepare_packet`` awaits the summariser); another lane's compaction may commit in
between. The race is forced at that point, never by timing: the test's ``prepare_packet`` returns
the real packet only after a second compaction has committed. (Async entry points run through
``async_to_sync``: the inline executors then work on the test's own connection, D29.)"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from asgiref.sync import async_to_sync

from agents import dispatch, health, lanes
from agents.lanes import ActiveTurn, Lane
from groupx_site.store import db
from memory import compaction, engine
from memory.context import build_context_packet
from memory.engine import checkpoint_moved
from memory.models import Summary
from memory.summariser import set_summariser
from setup_wizard import roster
from tests.unit.room import actor, bind, post, queued_turn
from turns.lifecycle import TurnOutcome
from turns.models import Turn, TurnAttempt

ALPHA = "agent:alpha"


class NumberedSummaries:
    """Answers every compaction with ``summary N`` (N counts the compactions); other jobs get a line."""

    def __init__(self) -> None:
        self.compactions = 0

    async def summarise(self, request) -> str:
        if request.purpose != "compaction":
            return "a dated line"
        self.compactions += 1
        return f"summary {self.compactions}"


@pytest.fixture
def summaries(settings):
    settings.GROUPX_CONFIG = settings.GROUPX_CONFIG.model_copy(
        update={
            "limits": settings.GROUPX_CONFIG.limits.model_copy(update={"contextCharacters": 4_096, "queuePerAgent": 64})
        }
    )
    numbered = NumberedSummaries()
    previous = set_summariser(numbered)
    for name in ("alpha", "beta", "gamma"):
        health.session_started(f"agent:{name}")  # automatic compaction asks only agents that are up
    yield numbered
    set_summariser(previous)
    health.reset()


def a_long_room(messages: int = 12) -> None:
    """More unread room history than alpha's soft target holds: its packet needs a compaction."""
    for i in range(messages):
        post(["agent:beta"], f"message {i}: " + "the build log says " * 30)


def compact_everything() -> None:
    """Another lane's compaction: it commits a new active summary, through the newest message."""
    assert async_to_sync(compaction.compact_once)(operation="automatic", keep_last=0) is True


def active() -> Summary:
    return Summary.objects.get(status="active")


def test_a_packet_read_before_a_compaction_committed_is_stale_and_the_claim_rebuilds_it(summaries):
    a_long_room()
    turn_id = queued_turn(ALPHA, "what did the build say?")
    source = Turn.objects.get(turn_id=turn_id).source_event_id
    agent = roster.live_agent(ALPHA)
    stale = build_context_packet(agent, source)
    assert not checkpoint_moved(stale)

    compact_everything()

    assert checkpoint_moved(stale)
    binding_id = bind(ALPHA)
    ready = dispatch.claim_for_prompt(
        agent, turn_id, source, binding_id=binding_id, instance_id=f"inst_{binding_id}", packet=stale
    )
    assert ready.claim is not None and ready.invoked
    assert ready.packet is not stale
    assert "summary 1" in ready.packet.text and "summary 1" not in stale.text
    assert ready.packet.summary_through_seq == active().through_seq
    assert TurnAttempt.objects.get(turn_id=turn_id).summary_through_seq == active().through_seq


def test_a_packet_still_current_at_the_claim_is_sent_as_built(summaries):
    a_long_room(2)
    turn_id = queued_turn(ALPHA, "anything new?")
    source = Turn.objects.get(turn_id=turn_id).source_event_id
    agent = roster.live_agent(ALPHA)
    built = build_context_packet(agent, source)
    binding_id = bind(ALPHA)
    ready = dispatch.claim_for_prompt(
        agent, turn_id, source, binding_id=binding_id, instance_id=f"inst_{binding_id}", packet=built
    )
    assert ready.packet is built


def test_a_lane_whose_packet_another_lanes_compaction_made_stale_prompts_with_the_new_summary(summaries, monkeypatch):
    a_long_room()
    turn_id = queued_turn(ALPHA, "what did the build say?")
    source = Turn.objects.get(turn_id=turn_id).source_event_id
    real_prepare = engine.prepare_packet
    built: list = []

    async def prepare_then_another_lane_compacts(agent, source_event_id):
        packet = await real_prepare(agent, source_event_id)  # compacts once: "summary 1"
        built.append(packet)
        # The race: another lane's compaction commits after this packet was built, before the claim.
        for i in range(3):
            await db.write(post)(["agent:beta"], f"later {i}: " + "more of the build log " * 30)
        assert await compaction.compact_once(operation="automatic", keep_last=0)
        return packet

    monkeypatch.setattr(lanes, "prepare_packet", prepare_then_another_lane_compacts)
    binding_id = bind(ALPHA)
    sessions = SimpleNamespace(
        agent=roster.live_agent(ALPHA),
        binding_id=binding_id,
        instance_id=f"inst_{binding_id}",
        session=SimpleNamespace(text_repaired=0),
        actor=actor(ALPHA),
        usable=lambda: True,
        mcp_recorded=True,
    )
    lane = Lane(sessions)
    prompts: list[str] = []

    async def prompt(session, active_turn, text):
        prompts.append(text)
        return TurnOutcome(status="completed", content="done")

    async def finish(active_turn, outcome, *, claim_next=False):
        return None

    monkeypatch.setattr(lane, "_prompt", prompt)
    monkeypatch.setattr(lane, "_finish", finish)
    lane.active = ActiveTurn(claim=None, turn_id=turn_id)

    async_to_sync(lane._run_turn)(turn_id, source, dispatch.ReadyTurn(needs_compaction=True))

    assert summaries.compactions >= 2
    assert "summary 1" in built[0].text
    [sent] = prompts
    newest = active()
    assert newest.content != "summary 1" and newest.content in sent
    assert "summary 1" not in sent
    assert TurnAttempt.objects.get(turn_id=turn_id).summary_through_seq == newest.through_seq

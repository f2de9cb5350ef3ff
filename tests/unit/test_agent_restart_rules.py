"""The domain rules behind an agent restart and a native reset (docs/DECISIONS.md D41), in-process:
which Turns a restart ends, who may be restarted, which native session may be resumed, and when a
native reset is a no-op."""

from __future__ import annotations

import pytest
from django.utils import timezone

from agents import instances
from agents.models import Actor, SessionBinding
from agents.restart import restart_agent
from groupx_site.core.errors import GroupXError
from groupx_site.core.ids import WEB_BINDING_ID
from memory import native_reset
from memory.engine import reset_context
from tests.unit.room import bind, claim, command_id, event_types, queued_turn, running
from turns import lifecycle
from turns.models import Turn

# ---- which Turns a restart ends ------------------------------------------------------------------


def test_a_restart_interrupts_only_that_agents_running_turn_and_leaves_its_queue_alone():
    mine, queued, other = queued_turn("agent:alpha"), queued_turn("agent:alpha"), queued_turn("agent:beta")
    running(mine)
    running(other)
    lifecycle.checkpoint_partial_text(mine, "so far")

    counts = lifecycle.recover_agent_turns("agent:alpha", reason="restart")

    assert counts == {"requeued": 0, "cancelled": 0, "interrupted": 1, "failed": 0}
    turn = Turn.objects.get(turn_id=mine)
    assert (turn.status, turn.error_code, turn.partial_text) == ("interrupted", "TURN_INTERRUPTED", "so far")
    terminal = event_types(event_type="turn.interrupted", body__turnId=mine, body__reason="restart")
    assert terminal == ["turn.interrupted"]
    assert Turn.objects.get(turn_id=queued).status == "queued"
    assert Turn.objects.get(turn_id=other).status == "running"


def test_a_restart_puts_a_claimed_but_never_sent_turn_back_in_the_queue():
    turn_id = queued_turn("agent:alpha")
    claim(turn_id)

    assert lifecycle.recover_agent_turns("agent:alpha", reason="restart")["requeued"] == 1
    assert lifecycle.next_queued_turn("agent:alpha").turn_id == turn_id


# ---- who may be restarted ------------------------------------------------------------------------


def test_a_restart_answers_with_the_instance_it_replaces_and_a_retry_replays_that_answer():
    binding = bind("agent:alpha")
    SessionBinding.objects.filter(binding_id=binding).update(transport="structured")
    body = {"clientCommandId": command_id()}

    first = restart_agent(WEB_BINDING_ID, "agent:alpha", body)
    bind("agent:alpha")  # the new instance; a replay must not report it
    again = restart_agent(WEB_BINDING_ID, "agent:alpha", body)

    assert first == again == {"actorId": "agent:alpha", "accepted": True, "previousInstanceId": f"inst_{binding}"}
    with pytest.raises(GroupXError) as conflict:
        restart_agent(WEB_BINDING_ID, "agent:beta", body)
    assert conflict.value.code == "CLIENT_COMMAND_CONFLICT"


@pytest.mark.parametrize(
    ("actor_id", "code"),
    [("agent:nobody", "UNKNOWN_ACTOR"), ("user:web", "UNKNOWN_ACTOR"), ("agent:retired", "UNKNOWN_TARGET")],
)
def test_only_a_live_agent_can_be_restarted(actor_id, code):
    # An agent the room knew (its Actor row stays) but no longer runs. Made here, not taken from the
    # migration's built-in rows: a transactional test elsewhere flushes those.
    Actor.objects.create(actor_id="agent:retired", kind="agent", display_name="Retired", enabled=False)
    body = {"clientCommandId": command_id()}
    with pytest.raises(GroupXError) as refused:
        restart_agent(WEB_BINDING_ID, actor_id, body)
    assert refused.value.code == code
    # Nothing was kept: the same id still works for a live agent.
    assert restart_agent(WEB_BINDING_ID, "agent:alpha", body)["accepted"] is True


# ---- which native session may be resumed ---------------------------------------------------------


def ready_binding(native_id: str) -> None:
    binding = bind("agent:alpha")
    SessionBinding.objects.filter(binding_id=binding).update(
        protocol="acp", cwd="/w", native_session_id=native_id, last_ready_at=timezone.now()
    )


def test_no_native_session_born_before_a_native_reset_is_resumed_again():
    ready_binding("old")
    assert instances.resume_candidate("agent:alpha", "kimi", "/w") == ("old", 0)
    queued_turn("agent:alpha")  # something to reset

    reset = reset_context(WEB_BINDING_ID, "web", {"clientCommandId": command_id(), "resetNativeSessions": True})
    assert instances.resume_candidate("agent:alpha", "kimi", "/w") == (None, reset["throughSeq"])
    ready_binding("fresh")
    ready_binding("old")  # a start that resumed the old id while the reset was written
    assert instances.resume_candidate("agent:alpha", "kimi", "/w") == ("fresh", reset["throughSeq"])


def test_a_plain_reset_keeps_the_native_sessions_resumable():
    ready_binding("kept")
    queued_turn("agent:alpha")
    reset_context(WEB_BINDING_ID, "web", {"clientCommandId": command_id()})
    assert instances.resume_candidate("agent:alpha", "kimi", "/w") == ("kept", 0)
    assert native_reset.mark() == 0


# ---- when a native reset is a no-op --------------------------------------------------------------


def reset(native: bool) -> dict:
    return reset_context(WEB_BINDING_ID, "web", {"clientCommandId": command_id(), "resetNativeSessions": native})


def test_a_native_reset_after_a_plain_one_still_resets_the_native_sessions_but_a_second_is_a_no_op():
    queued_turn("agent:alpha")
    assert reset(False)["reset"] is True
    assert reset(False)["reset"] is False

    native = reset(True)
    assert native["reset"] is True and native_reset.mark() == native["throughSeq"]
    assert reset(True)["reset"] is False
    assert event_types(event_type="context.reset", body__resetNativeSessions=True) == ["context.reset"]

"""Supervision pairing in-process (turns/supervision.py, turns/watch.py, turns/steer.py; FEATURES §12).

The room is tests/unit/conftest.py's: agents alpha, beta and gamma.
"""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync

from groupx_site.core.errors import GroupXError
from memory.context import build_context_packet
from memory.dated_sources import OBSERVER_COMMAND_TYPES
from memory.transcript import WATCH_BRIEF_KIND, context_events
from rooms.models import ClientCommand, Event
from setup_wizard import roster
from tests.unit.room import actor, claim, command_id, post, running
from turns import watch
from turns.lifecycle import TurnOutcome, finish
from turns.member_actions import member_send
from turns.messages import post_message
from turns.models import SupervisionPair, SupervisionPairTurn, SupervisionSteerCount, Turn
from turns.steer import member_steer

ALPHA, BETA, GAMMA = "agent:alpha", "agent:beta", "agent:gamma"
PAIR = {"observers": [BETA], "mode": "live_steer"}


def written() -> tuple[int, ...]:
    return (
        Event.objects.count(),
        Turn.objects.count(),
        ClientCommand.objects.count(),
        SupervisionPair.objects.count(),
        SupervisionPairTurn.objects.count(),
    )


def refused(call, *args, **kwargs) -> GroupXError:
    before = written()
    with pytest.raises(GroupXError) as error:
        call(*args, **kwargs)
    assert written() == before  # nothing of a refused command is left
    return error.value


def paired(task: str = "write the report") -> dict:
    return post([ALPHA], task, supervision=PAIR)


def observer_binding(accepted: dict) -> str:
    """The observer's Watch Turn, claimed: its binding id."""
    watch_turn = accepted["watchTurns"][0]["turnId"]
    claim(watch_turn)
    return Turn.objects.get(turn_id=watch_turn).binding_id


def steer(binding: str, action: str = "nudge", **extra) -> dict:
    return member_steer(
        binding,
        {
            "action": action,
            "reason": "you are off track",
            "content": "focus on tests",
            "clientCommandId": command_id(),
            **extra,
        },
    )


@pytest.mark.parametrize(
    ("supervision", "code"),
    [
        ({"observers": [BETA]}, "INVALID_ENVELOPE"),
        ({"observers": [BETA], "mode": "approve"}, "INVALID_ENVELOPE"),
        ({"observers": [], "mode": "live_steer"}, "INVALID_ENVELOPE"),
        (
            {"observers": ["agent:a", "agent:b", "agent:c", "agent:d", "agent:e"], "mode": "live_steer"},
            "INVALID_ENVELOPE",
        ),
        ({"observers": [BETA, BETA], "mode": "live_steer"}, "INVALID_ENVELOPE"),
        ({"observers": ["codex"], "mode": "live_steer"}, "INVALID_ENVELOPE"),
        ({"observers": [BETA], "mode": "live_steer", "extra": 1}, "INVALID_ENVELOPE"),
        ({"observers": [ALPHA], "mode": "live_steer"}, "INVALID_ENVELOPE"),  # overlaps to
        ("agent:beta", "INVALID_ENVELOPE"),
        ({"observers": ["user:assistant"], "mode": "live_steer"}, "SUPERVISION_PAIR_INVALID"),
        ({"observers": ["agent:nobody"], "mode": "live_steer"}, "UNKNOWN_TARGET"),  # resolved like a worker (D94)
    ],
)
def test_each_bad_supervision_on_a_post_has_its_code_and_writes_nothing(supervision, code):
    error = refused(post, [ALPHA], "task", supervision=supervision)
    assert error.code == code


def test_an_observer_that_all_also_chose_as_worker_is_refused_by_the_store():
    post([ALPHA])  # a seq exists, so "nothing written" is a real comparison
    error = refused(post, ["@all"], "task", supervision=PAIR)
    assert (error.code, error.details["overlappingActors"]) == ("SUPERVISION_PAIR_INVALID", [BETA])


def test_one_transaction_writes_source_workers_brief_observers_pair_and_rows_in_that_order():
    accepted = post([ALPHA, GAMMA], "write the report", supervision=PAIR)

    rows = list(Event.objects.filter(correlation_id=accepted["correlationId"]).order_by("seq"))
    assert [(e.event_type, e.targets) for e in rows] == [
        ("message.created", [ALPHA, GAMMA]),
        ("turn.queued", [ALPHA]),
        ("turn.queued", [GAMMA]),
        ("message.created", [BETA]),
        ("turn.queued", [BETA]),
        ("supervision.paired", [ALPHA, GAMMA, BETA]),
    ]
    assert {e.root_correlation_id for e in rows} == {accepted["correlationId"]}
    brief, paired_event = rows[3], rows[5]
    assert brief.actor_id == "system:groupx" and brief.body["kind"] == WATCH_BRIEF_KIND
    assert "write the report" in brief.body["content"]
    assert (accepted["watchEventId"], accepted["pairEventId"]) == (brief.event_id, paired_event.event_id)
    assert [t["target"] for t in accepted["turns"]] == [ALPHA, GAMMA]
    [watch_turn] = accepted["watchTurns"]
    assert Turn.objects.get(turn_id=watch_turn["turnId"]).source_event_id == brief.event_id
    pair = SupervisionPair.objects.get(pair_event_id=paired_event.event_id)
    assert paired_event.body["workers"] == [{"actorId": t["target"], "turnId": t["turnId"]} for t in accepted["turns"]]
    assert sorted(SupervisionPairTurn.objects.filter(pair=pair).values_list("actor_id", "role")) == [
        (ALPHA, "worker"),
        (BETA, "observer"),
        (GAMMA, "worker"),
    ]


def test_a_retry_returns_the_same_pair_and_other_observers_under_the_same_id_conflict():
    body = {"clientCommandId": "pair-1", "to": [ALPHA], "content": "task", "supervision": PAIR}
    accepted = post_message(body)
    assert post_message(body) == accepted
    error = refused(post_message, body | {"supervision": {"observers": [GAMMA], "mode": "live_steer"}})
    assert error.code == "CLIENT_COMMAND_CONFLICT"


def test_the_watch_brief_stays_out_of_other_packets_but_is_the_observers_current_message():
    accepted = paired("write the report")
    post([GAMMA], "later message")
    gamma_turn = Turn.objects.filter(target_actor_id=GAMMA).get()
    gamma_packet = build_context_packet(roster.live_agent(GAMMA), gamma_turn.source_event_id).text
    assert "Supervision watch" not in gamma_packet and "[supervision_watch]" not in gamma_packet
    assert not context_events().filter(event_id=accepted["watchEventId"]).exists()

    observer = build_context_packet(roster.live_agent(BETA), accepted["watchEventId"]).text
    assert (
        observer.index("[groupx_protocol]")
        < observer.index("[supervision_watch]")
        < observer.index("[current_message]")
    )
    assert accepted["turns"][0]["turnId"] in observer.split("[supervision_watch]")[1]
    assert observer.split("[current_message]\n")[1].startswith("Supervision watch")


def test_steer_and_watch_outside_a_watch_turn_answer_watch_required():
    accepted = paired()
    worker = running(accepted["turns"][0]["turnId"])
    binding = Turn.objects.get(turn_id=worker.turn_id).binding_id
    assert refused(steer, binding).code == "SUPERVISION_WATCH_REQUIRED"
    with pytest.raises(GroupXError) as error:
        async_to_sync(watch.member_watch)(binding, {})
    assert error.value.code == "SUPERVISION_WATCH_REQUIRED"


def test_a_nudge_queues_guidance_one_hop_deeper_attached_to_the_pair():
    accepted = paired()
    subject = accepted["turns"][0]["turnId"]
    running(subject)
    binding = observer_binding(accepted)

    result = steer(binding)

    nxt = Turn.objects.get(turn_id=result["nextTurnId"])
    watch_turn = Turn.objects.get(turn_id=accepted["watchTurns"][0]["turnId"])
    assert (nxt.target_actor_id, nxt.hop_count, nxt.parent_turn_id) == (
        ALPHA,
        watch_turn.hop_count + 1,
        watch_turn.turn_id,
    )
    assert nxt.root_correlation_id == accepted["correlationId"]
    assert SupervisionPairTurn.objects.get(turn_id=nxt.turn_id).role == "worker"
    guidance = Event.objects.get(event_id=result["messageEventId"])
    assert (guidance.actor_id, guidance.targets, guidance.body["content"]) == (BETA, [ALPHA], "focus on tests")
    steered = Event.objects.get(event_id=result["steerEventId"])
    assert {k: steered.body[k] for k in ("action", "reason", "subjectTurnId", "nextTurnId")} == {
        "action": "nudge",
        "reason": "you are off track",
        "subjectTurnId": subject,
        "nextTurnId": nxt.turn_id,
    }
    assert Turn.objects.get(turn_id=subject).status == "running"  # a nudge cancels nothing
    # PROTOCOL §6.7: the steered Turn (its turn.queued and its guidance) is caused by the steer
    # event, written after them; the Watch Turn is its parent and the steer's cause.
    assert Event.objects.get(event_id=nxt.queued_event_id).causation_id == steered.event_id
    assert guidance.causation_id == steered.event_id and steered.causation_id == watch_turn.turn_id
    assert guidance.seq < steered.seq


def test_an_interrupt_cancels_the_whole_subject_turn_and_an_ended_one_cannot_be_interrupted():
    accepted = paired()
    subject = accepted["turns"][0]["turnId"]
    running(subject)
    binding = observer_binding(accepted)

    steer(binding, "interrupt")
    assert Turn.objects.get(turn_id=subject).status == "cancelling"

    Turn.objects.filter(turn_id=subject).update(status="cancelled")
    error = refused(steer, binding, "interrupt", subjectTurnId=subject)
    assert error.code == "SUPERVISION_PAIR_INVALID"


def test_the_fourth_steer_of_one_turn_reaches_the_limit(settings):
    limits = settings.GROUPX_CONFIG.limits.model_copy(update={"queuePerAgent": 10, "actorCallsPerRoot": 10})
    settings.GROUPX_CONFIG = settings.GROUPX_CONFIG.model_copy(update={"limits": limits})
    accepted = paired()
    subject = accepted["turns"][0]["turnId"]
    running(subject)
    binding = observer_binding(accepted)
    for n in (1, 2, 3):
        assert steer(binding, subjectTurnId=subject)["steerCount"] == n

    error = refused(steer, binding, subjectTurnId=subject)

    assert (error.code, error.details["limit"]) == ("STEER_LIMIT_REACHED", 3)
    assert SupervisionSteerCount.objects.get(subject_turn_id=subject).steer_count == 3


def test_a_watch_turn_cannot_send_to_its_worker_but_may_send_to_others():
    accepted = paired()
    binding = observer_binding(accepted)
    body = {"to": [ALPHA], "content": "do it differently", "clientCommandId": command_id()}
    assert refused(member_send, binding, body).code == "SUPERVISION_STEER_REQUIRED"
    assert member_send(binding, body | {"to": [GAMMA], "clientCommandId": command_id()})["turns"]


def test_a_snapshot_carries_tool_names_and_public_excerpts_only():
    accepted = paired("x" * 900)
    subject = accepted["turns"][0]["turnId"]
    claimed = running(subject)
    finish(
        claimed,
        subject,
        TurnOutcome(
            status="completed",
            content="done " * 200,
            reasoning="secret thoughts",
            tool_records=[
                {
                    "nativeType": "tool.completed",
                    "toolCallId": "call-1",
                    "details": {
                        "name": "Bash",
                        "status": "completed",
                        "command": "cat secret.txt",
                        "output": "hunter2",
                    },
                }
            ],
        ),
        actor(ALPHA),
    )
    pair = SupervisionPair.objects.get()
    shot = watch.snapshot(pair, Turn.objects.get(turn_id=subject), None)

    assert shot["terminal"] and shot["status"] == "completed" and not shot["subjectCancelled"]
    assert shot["task"] == {"eventId": accepted["messageEventId"], "excerpt": "x" * 500}
    assert shot["tools"] == [{"name": "Bash", "status": "completed", "toolCallId": "call-1"}]
    assert [len(m["excerpt"]) for m in shot["messages"]] == [500]
    assert accepted["watchEventId"] not in [m["eventId"] for m in shot["messages"]]
    text = repr(shot)
    assert "secret" not in text and "hunter2" not in text


def test_an_observers_turn_is_the_command_type_dated_memory_leaves_out():
    accepted = paired()
    watch_turn = Turn.objects.get(turn_id=accepted["watchTurns"][0]["turnId"])
    assert watch_turn.command_type in OBSERVER_COMMAND_TYPES
    assert Turn.objects.get(turn_id=accepted["turns"][0]["turnId"]).command_type not in OBSERVER_COMMAND_TYPES


def test_a_watch_on_an_ended_worker_answers_at_once_and_records_that_it_looked():
    accepted = paired()
    subject = accepted["turns"][0]["turnId"]
    finish(running(subject), subject, TurnOutcome(status="completed", content="done"), actor(ALPHA))
    binding = observer_binding(accepted)

    answer = async_to_sync(watch.member_watch)(binding, {"until": "terminal"})

    assert (answer["timedOut"], answer["snapshot"]["turnId"], answer["snapshot"]["terminal"]) == (False, subject, True)
    observed = Event.objects.get(event_type="supervision.observed")
    assert (observed.actor_id, observed.seq) == (BETA, answer["snapshot"]["watchCursor"])


def test_a_watch_with_no_milestone_before_its_timeout_answers_timed_out():
    accepted = paired()
    running(accepted["turns"][0]["turnId"])
    binding = observer_binding(accepted)

    answer = async_to_sync(watch.member_watch)(binding, {"timeoutMs": 1})

    assert answer["timedOut"] and answer["snapshot"]["status"] == "running"


@pytest.mark.parametrize(
    "payload",
    [{"until": "forever"}, {"timeoutMs": 3_600_001}, {"afterSeq": -1}, {"subject": "turn_x"}, {"from": "agent:alpha"}],
)
def test_a_malformed_watch_is_refused_before_it_waits(payload):
    with pytest.raises(GroupXError) as error:
        watch.check_watch(payload)
    assert error.value.code in ("INVALID_ENVELOPE", "SENDER_FIELD_FORBIDDEN")

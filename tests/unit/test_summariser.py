"""Memory asks a summariser (memory/summariser.py, docs/DECISIONS.md D33): compaction through a
registered test double of the interface, and the clear error when none is registered. The CLI
implementation (agents/cli_summariser.py) is covered by the server-process tests of compaction and
dated memory (tests/test_context.py, tests/test_memory.py)."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings

from memory import compaction
from memory.models import Summary
from memory.summariser import (
    NoSummariser,
    SummariserError,
    SummaryRequest,
    set_summariser,
    summariser,
)
from tests.unit.room import post


class ScriptedSummariser:
    """Answers each request from a script per actor: a text, or a SummariserError to raise."""

    def __init__(self, **script):
        self.script = {f"agent:{name}": list(answers) for name, answers in script.items()}
        self.requests: list[SummaryRequest] = []

    async def summarise(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        answer = self.script[request.agent.actor_id].pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


@pytest.fixture
def registered():
    """Restores whatever was registered (the agents app registers its CLI summariser)."""
    previous = set_summariser(None)
    yield set_summariser
    set_summariser(previous)


def compact() -> bool:
    return async_to_sync(compaction.compact_once)(operation="manual", keep_last=0, require_healthy=False)


def room_messages(n: int = 3) -> None:
    for i in range(n):
        post(["agent:alpha"], f"message {i}: the build runs on 2 cores")


def active_summary() -> Summary | None:
    return Summary.objects.filter(status="active").first()


def test_compaction_asks_the_first_agent_and_swaps_its_summary_in(registered):
    room_messages()
    fake = ScriptedSummariser(alpha=["  the room agreed on 2 cores  "])
    registered(fake)
    assert compact() is True
    summary = active_summary()
    assert (summary.content, summary.generator_actor_id) == ("the room agreed on 2 cores", "agent:alpha")
    [request] = fake.requests
    assert request.purpose == "compaction"
    assert request.prompt.startswith("[groupx_room_compaction]\n")
    assert "message 2: the build runs on 2 cores" in request.prompt
    assert request.max_characters == compaction.summary_cap(settings.GROUPX_CONFIG.limits.contextCharacters)
    assert request.first_event_ms == settings.GROUPX_CONFIG.timeouts.firstEventMs
    assert request.idle_ms == settings.GROUPX_CONFIG.timeouts.idleMs


def test_a_transient_failure_is_retried_and_a_wrong_answer_goes_to_the_next_agent(registered, monkeypatch):
    monkeypatch.setattr(compaction, "BACKOFF_SECONDS", 0)
    room_messages()
    fake = ScriptedSummariser(
        alpha=[
            SummariserError("TURN_IDLE_TIMEOUT", "no answer"),
            SummariserError("PROTOCOL_INVALID_MESSAGE", "garbled"),
        ],
        beta=["beta's summary"],
    )
    registered(fake)
    assert compact() is True
    assert [r.agent.actor_id for r in fake.requests] == ["agent:alpha", "agent:alpha", "agent:beta"]
    assert active_summary().generator_actor_id == "agent:beta"


def test_when_every_agent_fails_the_summary_is_unchanged_and_the_last_code_is_raised(registered):
    room_messages()
    refuse = SummariserError("ADAPTER_NOT_FOUND", "no such command")
    registered(
        ScriptedSummariser(
            alpha=[refuse], beta=[refuse], gamma=[SummariserError("PROTOCOL_INVALID_MESSAGE", "garbled")]
        )
    )
    with pytest.raises(compaction.CompactionFailed) as failed:
        compact()
    assert failed.value.code == "PROTOCOL_INVALID_MESSAGE"
    assert active_summary() is None


def test_with_no_summariser_registered_compaction_raises_a_clear_error_and_changes_nothing(registered):
    room_messages()
    with pytest.raises(NoSummariser, match="no summariser is registered"):
        summariser()
    with pytest.raises(NoSummariser, match="set_summariser"):
        compact()
    assert active_summary() is None


def test_the_agents_app_registers_its_cli_summariser():
    from agents.cli_summariser import CliSummariser

    assert isinstance(summariser(), CliSummariser)


def test_a_compaction_failure_outside_the_documented_codes_is_a_session_that_gave_no_summary():
    known = compaction.CompactionFailed("TURN_IDLE_TIMEOUT", "no answer")
    new = compaction.CompactionFailed("NATIVE_RESUME_UNSUPPORTED", "cannot load")
    assert known.code == "TURN_IDLE_TIMEOUT"
    assert (new.code, str(new)) == ("SESSION_NOT_AVAILABLE", "cannot load (NATIVE_RESUME_UNSUPPORTED)")
    assert new.code in compaction.FAILURE_CODES

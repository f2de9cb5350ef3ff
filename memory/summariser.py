"""What memory asks when it needs text written for it: the room's checkpoint summary
(``memory.compaction``) and an agent's dated-memory rollup (``memory.dated``) (docs/DECISIONS.md D33).

Memory states the request (which agent writes, the prompt, the answer's limit, the timeouts); it
does not know how the answer is produced. The agents layer implements ``Summariser`` with a
short-lived, MCP-free CLI session (``agents/cli_summariser.py``) and registers it when Django loads the
agents app, so the server, the management commands and the test tiers all find it. The in-process
tier may register a test double (``set_summariser``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from django.conf import settings

from setup_wizard.config import ResolvedAgent

# Failures worth an immediate retry: the CLI did not start, shake hands or answer in time, or the
# run was cut off (FEATURES §14 "Retry"). A wrong answer, a native interaction or a policy block is
# not retried.
TRANSIENT_CODES = frozenset(
    {
        "ADAPTER_START_FAILED",
        "PROTOCOL_HANDSHAKE_TIMEOUT",
        "SESSION_NOT_AVAILABLE",
        "TURN_FIRST_EVENT_TIMEOUT",
        "TURN_IDLE_TIMEOUT",
        "TURN_INTERRUPTED",
    }
)


@dataclass(frozen=True)
class SummaryRequest:
    """One prompt for ``agent`` to answer, in its own session (never the one that answers its Turns).

    ``purpose`` names the job (``compaction``, ``dated-memory``) in the session's ids and logs.
    ``max_characters`` is the answer's limit the prompt states; the caller checks the answer
    against it. The timeouts are the wait for the first event and between events, in ms."""

    agent: ResolvedAgent
    prompt: str
    purpose: str
    max_characters: int
    first_event_ms: int
    idle_ms: int

    @classmethod
    def of(cls, agent: ResolvedAgent, prompt: str, *, purpose: str, max_characters: int) -> SummaryRequest:
        """A request with the configured turn timeouts (``groupx.json`` ``timeouts``)."""
        timeouts = settings.GROUPX_CONFIG.timeouts
        return cls(
            agent=agent,
            prompt=prompt,
            purpose=purpose,
            max_characters=max_characters,
            first_event_ms=timeouts.firstEventMs,
            idle_ms=timeouts.idleMs,
        )


class SummariserError(Exception):
    """The summariser gave no answer. ``code`` is an error code of the protocol; ``transient`` says
    whether an immediate retry makes sense."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message

    @property
    def transient(self) -> bool:
        return self.code in TRANSIENT_CODES


class NoSummariser(RuntimeError):
    """Nothing is registered: a wiring mistake, not the agent's failure."""


class Summariser(Protocol):
    async def summarise(self, request: SummaryRequest) -> str:
        """The agent's answer, as it gave it. Raises ``SummariserError``."""
        ...


_current: Summariser | None = None
# Whether an agent's session is up right now. The agents layer owns that fact (its health table) and
# registers the question with the summariser, so memory asks without importing upward (D150).
_is_ready: Callable[[str], bool] = lambda _actor_id: True  # noqa: E731 - no runtime: nothing to consult


def set_summariser(implementation: Summariser | None) -> Summariser | None:
    """Register ``implementation`` (None unregisters); returns the one it replaces."""
    global _current
    previous, _current = _current, implementation
    return previous


def summariser() -> Summariser:
    if _current is None:
        raise NoSummariser(
            "no summariser is registered: memory cannot write a room summary or a dated-memory rollup. "
            "The agents app registers its CLI summariser when Django loads it (agents/apps.py); "
            "code that runs without it must call memory.summariser.set_summariser(...) first."
        )
    return _current


def set_readiness(is_ready: Callable[[str], bool]) -> Callable[[str], bool]:
    """Register how to tell that an agent's session is up (by actor id); returns the one it replaces."""
    global _is_ready
    previous, _is_ready = _is_ready, is_ready
    return previous


def is_ready(actor_id: str) -> bool:
    return _is_ready(actor_id)

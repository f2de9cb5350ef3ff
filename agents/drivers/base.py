"""The contract between GroupX's agent runtime and the native CLI drivers.

Drivers never import the ORM. They turn native protocol messages into the typed adapter events
below, and the runtime (``agents.agent_runtime``) turns those into ``turns`` actions. One
``NativeSession`` owns one child process holding one native session; at most one turn is active
at a time.

Life of a turn, from the runtime's side::

    session = await driver.start(profile, resume_native_session_id=...)   # DriverError on failure
    turn = await session.start_turn(turn_id, prompt_text)  # the native prompt is written here
    async for event in turn.events():                        # ends after exactly one terminal
        ...
    await turn.cancel()                                      # native cancel, at most once
    await session.close()

Every ``events()`` stream ends with exactly one terminal event (``TurnCompleted``,
``TurnCancelled`` or ``TurnFailed``). A crash, garbage on the wire or a native interaction
request becomes a ``TurnFailed`` with the protocol's code; the driver then reports
``session.needs_rebuild`` so the runtime replaces the session for later turns.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from groupx_site.core.errors import ErrorCode, declared

from .remote import SshTarget

# Short names (plain str) for the codes a driver raises or puts in TurnFailed. The codes themselves, and their
# HTTP statuses, are declared once in groupx_site/core/errors.py (Django-free, so drivers may import it).
ADAPTER_START_FAILED = ErrorCode.ADAPTER_START_FAILED.value
PROTOCOL_HANDSHAKE_TIMEOUT = ErrorCode.PROTOCOL_HANDSHAKE_TIMEOUT.value
PROTOCOL_INVALID_MESSAGE = ErrorCode.PROTOCOL_INVALID_MESSAGE.value
SESSION_NOT_AVAILABLE = ErrorCode.SESSION_NOT_AVAILABLE.value
NATIVE_RESUME_UNSUPPORTED = ErrorCode.NATIVE_RESUME_UNSUPPORTED.value
NATIVE_POLICY_BLOCKED = ErrorCode.NATIVE_POLICY_BLOCKED.value
UNEXPECTED_NATIVE_INTERACTION = ErrorCode.UNEXPECTED_NATIVE_INTERACTION.value
TURN_INTERRUPTED = ErrorCode.TURN_INTERRUPTED.value
TURN_CANCEL_TIMEOUT = ErrorCode.TURN_CANCEL_TIMEOUT.value
MCP_BINDING_MISMATCH = ErrorCode.MCP_BINDING_MISMATCH.value

# Start failures worth another attempt (NATIVE_PROTOCOLS §1.3).
RETRYABLE_START_CODES = frozenset(
    {
        ADAPTER_START_FAILED,
        PROTOCOL_HANDSHAKE_TIMEOUT,
        PROTOCOL_INVALID_MESSAGE,
        SESSION_NOT_AVAILABLE,
        TURN_INTERRUPTED,
    }
)
# Resume failures after which a fresh session is started instead.
RESUME_FALLBACK_CODES = frozenset(
    {ADAPTER_START_FAILED, NATIVE_RESUME_UNSUPPORTED, PROTOCOL_INVALID_MESSAGE, SESSION_NOT_AVAILABLE}
)


class DriverError(Exception):
    """A session could not be started, resumed or used. ``code`` is a protocol error code."""

    def __init__(self, code: str, message: str, *, retryable: bool | None = None):
        code = declared(code).value  # an undeclared code is refused here, not at the client
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retryable = code in RETRYABLE_START_CODES if retryable is None else retryable


@dataclass(frozen=True)
class Timeouts:
    """Milliseconds, from ``groupx.json`` ``timeouts`` (FEATURES §2.1)."""

    handshake_ms: int = 15_000
    request_ms: int = 10_000
    cancel_ms: int = 10_000
    close_ms: int = 5_000


@dataclass(frozen=True)
class McpAttachment:
    """The GroupX member MCP endpoint injected into the native session."""

    url: str  # e.g. http://127.0.0.1:4310/mcp
    binding_id: str  # sent as the X-GroupX-Binding header


@dataclass(frozen=True)
class LaunchProfile:
    agent_id: str  # "kimi", "reviewer"
    actor_id: str  # "agent:kimi"
    driver: str  # codex | grok | kimi | hermes | claude
    command: tuple[str, ...]  # executable [+ one script]; the driver appends its own fixed argv
    cwd: str  # absolute
    instance_id: str
    binding_id: str
    mcp: McpAttachment | None = None
    timeouts: Timeouts = field(default_factory=Timeouts)
    env: dict[str, str] | None = None  # None: inherit the server's environment unchanged
    # Where a driver writes a secret its CLI reads from a file (secret_file.py, D39); None: the
    # system's temp directory.
    private_dir: str | None = None
    # Set for an agent on another machine (remote.py, D51): the CLI runs there through ssh, ``cwd``
    # is a path on that machine and ``mcp.url`` the forwarded address on its loopback.
    ssh: SshTarget | None = None


# ---- adapter events -------------------------------------------------------------------------


@dataclass(frozen=True)
class TurnStarted:
    native_turn_id: str | None = None


@dataclass(frozen=True)
class ContentDelta:
    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True)
class ToolProgress:
    """A native tool call started or finished; ``details`` is the driver's bounded projection
    (at least ``name`` and ``status``), never raw arguments or output."""

    phase: Literal["tool.started", "tool.completed"]
    tool_call_id: str | None
    details: dict[str, Any]


@dataclass(frozen=True)
class TurnCompleted:
    content: str | None = None  # None: the runtime uses the accumulated deltas
    stop_reason: str | None = None


@dataclass(frozen=True)
class TurnCancelled:
    pass


@dataclass(frozen=True)
class TurnFailed:
    error_code: str
    message: str = ""


AdapterEvent = TurnStarted | ContentDelta | ReasoningDelta | ToolProgress | TurnCompleted | TurnCancelled | TurnFailed
TERMINAL_EVENTS = (TurnCompleted, TurnCancelled, TurnFailed)


class NativeTurn(abc.ABC):
    """One native turn; created by ``NativeSession.start_turn`` after the prompt was written."""

    native_turn_id: str | None = None

    @abc.abstractmethod
    def events(self) -> AsyncIterator[AdapterEvent]:
        """Yield adapter events; the last one is always a terminal event."""

    def ready_event(self) -> AdapterEvent | None:
        """The next event of ``events`` if it is already there, taken without waiting; None when
        the caller must wait on ``events`` for it (the default: always)."""
        return None

    @abc.abstractmethod
    async def cancel(self) -> None:
        """Send the native cancel/interrupt once. The terminal still arrives through ``events``."""

    def abandon(self) -> None:
        """The runtime stopped reading ``events`` (a cap, a timeout, a stop): stop holding the CLI's
        output back for it, and drop what is queued. The terminal is still decided as usual."""
        return  # a driver that never holds output back has nothing to let go of


class NativeSession(abc.ABC):
    native_session_id: str
    resumed: bool = False  # True when the native resume/load really succeeded
    mcp_verified: bool = False  # True when the GroupX MCP descriptor was accepted by the session
    needs_rebuild: bool = False  # set after a crash, garbage, or a poisoned runtime
    stderr_tail: str = ""

    @property
    def text_repaired(self) -> int:
        """Lone surrogates replaced with U+FFFD in what the CLI sent, over the session's life."""
        return 0

    @abc.abstractmethod
    async def start_turn(self, turn_id: str, prompt_text: str) -> NativeTurn:
        """Write the native prompt and return the turn. Raises DriverError(SESSION_NOT_AVAILABLE)
        if the session is dead or another turn is active."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Bounded close: stdin EOF, then SIGTERM, then SIGKILL of the process group. Idempotent."""

    @property
    @abc.abstractmethod
    def alive(self) -> bool: ...


class Driver(abc.ABC):
    name: str

    @abc.abstractmethod
    async def start(self, profile: LaunchProfile, *, resume_native_session_id: str | None = None) -> NativeSession:
        """Launch the CLI and open (or resume/load) a native session. Raises DriverError. When a
        resume is asked for but fails with a RESUME_FALLBACK_CODES code, raise it: the session
        manager decides whether to start fresh."""


def prompt_text(context_packet: str | None, content: str, *, marker: str = "[current_message]") -> str:
    """NATIVE_PROTOCOLS §1.7: packet, blank line, marker line, message."""
    if not context_packet:
        return content
    return f"{context_packet}\n\n{marker}\n{content}"

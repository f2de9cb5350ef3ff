"""Consume one native turn's events into text: the one routine the lanes and the one-shot
summariser share (docs/DECISIONS.md D23, D33).

``collect`` takes the driver's events straight from its stream, one at a time (what it has not taken
stays in the driver's bounded backlog, whose fullness stops the reading of a CLI that outruns us),
waits at most ``firstEventMs`` for the CLI's first answer and ``idleMs`` between the next ones, keeps the reply, the
reasoning and the tool progress within their caps, and returns how the turn ended. Whatever ended
it, the native turn is abandoned: nobody reads its events any more, so the driver must not hold the
CLI's output back for us.

What a caller does besides collecting (a lane marks the Turn started, publishes deltas, writes
checkpoints, sends the native cancel) it does in its ``TurnHooks``.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from agents.drivers.base import (
    ContentDelta,
    NativeTurn,
    ReasoningDelta,
    ToolProgress,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
)
from groupx_site.core.errors import ErrorCode

# Characters are code points, as every other text limit of the protocol counts them.
REPLY_LIMIT_CHARACTERS = 1_048_576
REASONING_LIMIT_CHARACTERS = 1_048_576
TOOL_RECORD_LIMIT = 1_000
OVER_CAP_CODE = ErrorCode.MESSAGE_TOO_LARGE.value
ENDED_CODE = "PROTOCOL_INVALID_MESSAGE"

# How a turn ended (``Ending.kind``).
COMPLETED = "completed"  # the CLI's terminal: ``content`` is the final reply
FAILED = "failed"  # the CLI's own failure: ``code`` and ``message`` are the CLI's
CANCELLED = "cancelled"  # the CLI reports the turn cancelled
TIMED_OUT = "timed_out"  # no event in time: ``code`` is TURN_FIRST_EVENT_TIMEOUT or TURN_IDLE_TIMEOUT
ENDED = "ended"  # the event stream ended without a terminal: ``code`` is PROTOCOL_INVALID_MESSAGE
OVER_CAP = "over_cap"  # a cap was passed: ``code`` is MESSAGE_TOO_LARGE, ``what`` names the stream


@dataclass
class Collected:
    """What the turn has said so far. A caller may fold ``content`` into one piece (a checkpoint)."""

    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    tools: list[dict] = field(default_factory=list)
    # Running lengths, so a delta never joins the whole text so far (that was quadratic).
    content_characters: int = 0
    reasoning_characters: int = 0


@dataclass(frozen=True)
class Ending:
    kind: str
    code: str | None = None
    message: str = ""
    # COMPLETED: the final reply; OVER_CAP of the final reply: the reply cut to the cap.
    content: str | None = None
    what: str = ""
    # False only when the CLI finished its turn (its session is still in step with us).
    out_of_step: bool = True


@dataclass(frozen=True)
class Caps:
    reply: int = REPLY_LIMIT_CHARACTERS
    reasoning: int = REASONING_LIMIT_CHARACTERS
    tool_records: int = TOOL_RECORD_LIMIT


class TurnHooks:
    """What a caller does as the turn goes; each hook does nothing by default."""

    async def started(self, event) -> None:
        """The first event arrived."""

    async def content(self, text: str) -> None:
        """``text`` was appended to ``Collected.content``."""

    async def reasoning(self, text: str) -> None:
        """``text`` was appended to ``Collected.reasoning``."""

    async def tool(self, record: dict) -> None:
        """``record`` was appended to ``Collected.tools``."""

    async def timed_out(self, heard: bool) -> None:
        """No event came in time; runs before the turn is abandoned (a lane sends the cancel)."""

    def deadline(self) -> float | None:
        """A loop time after which waiting stops (a requested cancel's deadline), or None."""
        return None


def _within(text: str, room: int) -> tuple[str, bool]:
    """``text`` cut to ``room`` characters, and whether it had to be cut."""
    if len(text) <= room:
        return text, False
    return text[: max(0, room)], True


async def collect(
    native: NativeTurn,
    collected: Collected,
    hooks: TurnHooks,
    *,
    first_event_s: float,
    idle_s: float,
    caps: Caps = Caps(),
    logger: logging.Logger,
    label: str,
) -> Ending:
    """Read ``native``'s events into ``collected`` until the turn ends; never raises for the CLI's
    doing (``label`` names the turn in the log)."""
    loop = asyncio.get_running_loop()
    # The stream is read in this task, each wait bounded by a timeout that cancels only the wait:
    # no task or queue per event between the driver and us (docs/DECISIONS.md D65). A timed-out
    # wait ends the stream, and nobody reads on after it: the turn is abandoned below.
    stream = native.events()
    started = False  # the driver's first event arrived (the prompt reached the CLI)
    # The CLI itself has answered: content, reasoning, a tool or a terminal. A driver's own
    # TurnStarted (written when the prompt goes out or is acknowledged) is not an answer, so a
    # CLI silent after it still meets the first-event timeout, not the idle one (D38).
    heard = False
    try:
        while True:
            wait = idle_s if heard else first_event_s
            deadline = hooks.deadline()
            if deadline is not None:
                wait = min(wait, max(0.0, deadline - loop.time()))
            # An event already queued is taken as is: no timer armed and cancelled for it.
            event = native.ready_event() if wait > 0 else None
            if event is None and wait > 0:
                try:
                    async with asyncio.timeout(wait) as waiting:
                        event = await anext(stream)
                except StopAsyncIteration:
                    return _ended()
                except Exception as exc:
                    if not (isinstance(exc, TimeoutError) and waiting.expired()):
                        logger.exception("%s: the driver's event stream failed", label)
                        return _ended()
            if event is None:
                await hooks.timed_out(heard)
                code = "TURN_IDLE_TIMEOUT" if heard else "TURN_FIRST_EVENT_TIMEOUT"
                return Ending(TIMED_OUT, code, f"no answer within {wait:g} s")
            if not started:
                started = True
                await hooks.started(event)
            heard = heard or not isinstance(event, TurnStarted)
            ending = await _take(event, collected, hooks, caps)
            if ending is not None:
                return ending
    finally:
        native.abandon()
        closing = getattr(stream, "aclose", None)
        if closing is not None:
            await closing()


def _ended() -> Ending:
    return Ending(ENDED, ENDED_CODE, "the turn ended without a terminal event")


async def _take(event, collected: Collected, hooks: TurnHooks, caps: Caps) -> Ending | None:
    if isinstance(event, ContentDelta) and event.text:
        text, over = _within(event.text, caps.reply - collected.content_characters)
        if text:
            collected.content.append(text)
            collected.content_characters += len(text)
            await hooks.content(text)
        if over:
            return Ending(OVER_CAP, OVER_CAP_CODE, what="reply")
    elif isinstance(event, ReasoningDelta) and event.text:
        text, over = _within(event.text, caps.reasoning - collected.reasoning_characters)
        if text:
            collected.reasoning.append(text)
            collected.reasoning_characters += len(text)
            await hooks.reasoning(text)
        if over:
            return Ending(OVER_CAP, OVER_CAP_CODE, what="reasoning")
    elif isinstance(event, ToolProgress):
        if len(collected.tools) >= caps.tool_records:
            return Ending(OVER_CAP, OVER_CAP_CODE, what="tool progress")
        record = {"nativeType": event.phase, "details": event.details}
        if event.tool_call_id:
            record["toolCallId"] = event.tool_call_id
        collected.tools.append(record)
        await hooks.tool(record)
    elif isinstance(event, TurnCompleted):
        content = event.content if event.content is not None else "".join(collected.content)
        if len(content) > caps.reply:
            # The CLI's own final text is over the cap; it has finished, so its session stays.
            return Ending(OVER_CAP, OVER_CAP_CODE, content=content[: caps.reply], what="final reply", out_of_step=False)
        return Ending(COMPLETED, content=content, out_of_step=False)
    elif isinstance(event, TurnCancelled):
        return Ending(CANCELLED, out_of_step=False)
    elif isinstance(event, TurnFailed):
        return Ending(FAILED, event.error_code, event.message or "the turn failed", out_of_step=False)
    return None

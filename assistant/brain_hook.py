"""The one request the side chat makes of whoever runs the assistant's brain: "answer this user
row" (and "cancel that one"). Like ``turns/wakeups.py``: the REST side never starts a CLI; the
runtime that owns the brain registers the receivers.

Today the receiver is ``assistant.runtime`` in the same process. In split mode (the agent runtime
in its own Channels worker, docs/DECISIONS.md D47) the registered ``run`` becomes a channel-layer
send to the worker and a wait for the reply row, with the same meaning: it returns once the reply
to that user row is stored (or raises ``SESSION_NOT_AVAILABLE`` when nobody runs the brain).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from groupx_site.core.errors import GroupXError

Runner = Callable[[str], Awaitable[None]]
Canceller = Callable[[str], bool]

_runner: Runner | None = None
_canceller: Canceller | None = None


def register(runner: Runner, canceller: Canceller) -> None:
    global _runner, _canceller
    _runner, _canceller = runner, canceller


def clear() -> None:
    global _runner, _canceller
    _runner = _canceller = None


def available() -> bool:
    """Whether anything runs the brain (checked before a side-chat row is written)."""
    return _runner is not None


async def run(user_message_id: str) -> None:
    """Answer the user row ``user_message_id`` (joining the run already answering it, if any)."""
    if _runner is None:
        raise GroupXError("SESSION_NOT_AVAILABLE", "the room assistant is not running in this process")
    await _runner(user_message_id)


def cancel(user_message_id: str) -> bool:
    """Ask the run answering ``user_message_id`` to stop; False when none is running or queued."""
    return _canceller(user_message_id) if _canceller is not None else False

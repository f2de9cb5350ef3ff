"""The requests the side chat makes of whoever runs the assistant's brain: "answer this user
row", "cancel that one" and "how are you". Like ``turns/wakeups.py``: the REST side never starts a
CLI; the runtime registers the receivers.

In the embedded default (and in the worker of split mode) they are the brain of this process
(``assistant/brain_runtime.py``). In a web process of split mode they are ``assistant.brain_link.
RemoteBrain``: a channel-layer request to the worker that holds the lease and a wait for the reply
row in the store, with the same meaning: ``run`` returns once the reply to that user row is stored
(or raises ``SESSION_NOT_AVAILABLE`` when nobody runs the brain), and the state is the worker's
brain's (docs/DECISIONS.md D55).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from assistant import status
from groupx_site.core.errors import GroupXError

# A runner may return the brain's status as of its answer (a worker's, sent with the reply).
Runner = Callable[[str], Awaitable[dict[str, Any] | None]]
Canceller = Callable[[str], Awaitable[bool]]
StateReader = Callable[[], Awaitable[dict[str, Any]]]

_runner: Runner | None = None
_canceller: Canceller | None = None
_state_reader: StateReader | None = None


def register(runner: Runner, canceller: Canceller, state_reader: StateReader | None = None) -> None:
    """``state_reader``: where the brain's status is read (None: this process's own)."""
    global _runner, _canceller, _state_reader
    _runner, _canceller, _state_reader = runner, canceller, state_reader


def clear() -> None:
    global _runner, _canceller, _state_reader
    _runner = _canceller = _state_reader = None


async def state() -> dict[str, Any]:
    """``{status, detail?}`` of the brain the side chat would ask."""
    return await _state_reader() if _state_reader is not None else status.snapshot()


def available() -> bool:
    """Whether anything runs the brain (checked before a side-chat row is written)."""
    return _runner is not None


async def run(user_message_id: str) -> dict[str, Any] | None:
    """Answer the user row ``user_message_id`` (joining the run already answering it, if any); the
    brain's status once it answered, when the runner knows it better than ``state`` does."""
    if _runner is None:
        raise GroupXError("SESSION_NOT_AVAILABLE", "the room assistant is not running in this process")
    return await _runner(user_message_id)


async def cancel(user_message_id: str) -> bool:
    """Ask the run answering ``user_message_id`` to stop; False when none is running or queued."""
    return await _canceller(user_message_id) if _canceller is not None else False

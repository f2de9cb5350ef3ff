"""The assistant's part of the runtime (FEATURES §13): started with the room after the agents,
stopped before them. When the config enables it, the brain's session starts in the background (the
room does not wait for it: the side chat answers ``SESSION_NOT_AVAILABLE`` while it starts) and the
side chat's hook (``assistant/brain_hook.py``) is pointed at it.

In split mode (docs/DECISIONS.md D55) ``start`` runs in the worker that holds the lease, with the
agents (a standby that takes the lease starts it; a worker that loses it stops it), and also
answers the web processes over the channel layer (``brain_link.serve``); a web process calls
``start_remote`` instead, which points the hook at the worker's brain.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from django.conf import settings

from agents.models import Actor
from assistant import brain_hook, brain_link, status
from assistant.brain import Brain, BrainSpec
from assistant.operator_binding import ASSISTANT_ACTOR_ID
from groupx_site.store import db, layer
from setup_wizard.config import command_argv

logger = logging.getLogger("groupx.assistant")

_brain: Brain | None = None
_starting: asyncio.Task | None = None
_link: brain_link.Inbox | None = None  # the worker's side: the web processes' requests
_remote: brain_link.RemoteBrain | None = None  # a web process's side: the worker's brain


def configured_spec() -> BrainSpec | None:
    """The brain the config asks for, or None when the assistant is off (or has no brain)."""
    config = settings.GROUPX_CONFIG.assistant
    if config is None or not config.enabled or config.brain is None:
        return None
    brain = config.brain
    cwd = str((Path(settings.GROUPX_CONFIG_PATH).parent / brain.cwd).resolve())
    return BrainSpec(
        driver=brain.driver,
        command=command_argv(brain.driver, brain.command),
        cwd=cwd,
        extra_instructions=config.extraInstructions,
    )


def display_name() -> str:
    config = settings.GROUPX_CONFIG.assistant
    return config.name if config is not None else "房间助理"


def enabled() -> bool:
    return configured_spec() is not None


def _sync_actor() -> None:
    """The ``user:assistant`` row carries the configured name, as agents' rows do theirs."""
    Actor.objects.filter(actor_id=ASSISTANT_ACTOR_ID).update(display_name=display_name())


async def start() -> None:
    global _brain, _starting, _link
    if _brain is not None:  # a start retried after a store fault (D24) keeps its brain
        return
    await db.write(_sync_actor)()
    spec = configured_spec()
    if spec is None:
        status.set_status("disabled")
        return
    brain = _brain = Brain(spec)

    async def cancel(user_message_id: str) -> bool:
        return brain.cancel(user_message_id)

    brain_hook.register(brain.run, cancel)
    status.set_status("starting")
    _starting = asyncio.get_running_loop().create_task(brain.start(), name="assistant-brain-start")
    if layer.is_shared():  # split mode: the web processes ask this brain
        _link = brain_link.serve(brain)


async def start_remote() -> None:
    """A web process of split mode: the side chat asks the brain of the worker that owns the room."""
    global _remote
    if _remote is not None or configured_spec() is None:
        return  # disabled: the status says so, and the side chat answers SESSION_NOT_AVAILABLE
    remote = _remote = brain_link.RemoteBrain()
    remote.start()
    brain_hook.register(remote.run, remote.cancel, remote.state)


async def stop() -> None:
    global _brain, _starting, _link, _remote
    brain_hook.clear()
    for linked in (_link, _remote):
        if linked is not None:
            await linked.stop()
    _link = _remote = None
    if _starting is not None:
        _starting.cancel()
        await asyncio.gather(_starting, return_exceptions=True)
        _starting = None
    if _brain is not None:
        brain, _brain = _brain, None
        await brain.close()

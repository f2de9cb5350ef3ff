"""The assistant's brain across processes: split mode (docs/DECISIONS.md D55).

In split mode the brain runs in the agents' worker that holds the lease (``assistant/brain_runtime.py``
starts it with the agents), and the side chat is served by any web process. They talk over the
channel layer:

- The brain's process ``serve``s: one channel of its own in the group ``groupx.assistant``, which
  takes ``assistant.run`` {userMessageId, replyTo} (start the run answering that user row, or join
  the one in flight: ``Brain.start_run``) and ``assistant.cancel`` {userMessageId, replyTo, token}.
  When a run ends it sends ``assistant.replied`` to the ``replyTo`` channel of each web process
  that asked; a cancel is answered with ``assistant.cancel_answer`` {token, accepted}.
- A web process registers a ``RemoteBrain`` as the side chat's hook (``assistant/brain_hook.py``):
  its ``run`` sends the request and waits for the reply row in the store, woken by
  ``assistant.replied`` on its own channel. The store is the truth, the layer only a wake-up: a
  message the layer loses (Redis restarted, the worker killed and replaced) costs at most a
  ``REPLY_POLL_SECONDS`` read, and the request is sent again every ``ASK_AGAIN_SECONDS`` while no
  reply is stored, which is harmless because the brain keeps one run per user row (a standby that
  took the lease meanwhile answers it). The same clientCommandId posted to two web processes is the
  same user row, so both join the one run in the worker.
- The brain's status is published beside the agents' health in the worker's lease row
  (``assistant/status.py``) and read from there (``stored_state``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from agents import lease
from assistant import conversation, status
from assistant.brain import Brain
from groupx_site.store import db, layer

logger = logging.getLogger("groupx.assistant")

ASSISTANT_GROUP = "groupx.assistant"
REPLY_POLL_SECONDS = 1.0  # the backstop read of the reply row, should a wake-up be lost
ASK_AGAIN_SECONDS = 5.0  # a request the layer lost (or a worker that died with it) is sent again
CANCEL_ANSWER_SECONDS = 5.0
RECONNECT_SECONDS = 5.0  # the longest pause before an inbox listens again on an unreachable layer
NO_WORKER_DETAIL = (
    "no worker owns the room: the assistant's brain starts with the agents in `manage.py runworker groupx-agents`"
)


class Inbox:
    """One channel of this process on the layer, received in a loop that listens again after a
    layer failure (a new channel, the group joined again: a restarted Redis forgot both)."""

    def __init__(self, name: str, handle: Callable[[dict[str, Any]], Awaitable[None]], group: str | None = None):
        self.name, self.handle, self.group = name, handle, group
        self.channel: str | None = None
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self.group and self.channel:  # a worker that lost the lease stops taking the requests
            with contextlib.suppress(Exception):
                await layer.channel_layer().group_discard(self.group, self.channel)
        self.channel = None

    async def _run(self) -> None:
        channel_layer = layer.channel_layer()
        failures = 0
        while True:
            try:
                self.channel = await channel_layer.new_channel()
                if self.group:
                    await channel_layer.group_add(self.group, self.channel)
                failures = 0
                await self._receive(channel_layer)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - the layer's connection errors have no common type
                self.channel = None
                failures += 1
                if failures == 1:
                    logger.warning("%s: the channel layer failed (%s); listening again", self.name, error)
                await asyncio.sleep(min(RECONNECT_SECONDS, 0.25 * 2**failures))

    async def _receive(self, channel_layer) -> None:
        # Pub/sub memberships do not expire (D59), and a receive must not be cancelled to renew one:
        # cancelling it unsubscribes the channel, and what is published meanwhile is lost.
        while True:
            message = await channel_layer.receive(self.channel)
            try:
                await self.handle(message)
            except Exception:  # one bad message must not end the inbox
                logger.exception("%s: %s failed", self.name, message.get("type"))


async def _send(channel: str, message: dict[str, Any]) -> None:
    try:
        await layer.channel_layer().send(channel, message)
    except Exception as error:  # noqa: BLE001 - the receiver reads the store at its interval anyway
        logger.warning("assistant: %s to %s was not sent (%s)", message.get("type"), channel, error)


# ---- the brain's side (the worker that holds the lease) ----------------------------------------


def serve(brain: Brain) -> Inbox:
    """Answer the web processes' requests with ``brain`` (started; stop it with the brain)."""

    async def handle(message: dict[str, Any]) -> None:
        user_message_id, reply_to = str(message.get("userMessageId") or ""), message.get("replyTo")
        if not user_message_id:
            return
        if message.get("type") == "assistant.run":
            task = brain.start_run(user_message_id)
            if reply_to:
                # The brain's status rides along: the copy published beside the lease is written
                # by the next beat, which may come after the web process has read the reply row.
                task.add_done_callback(
                    lambda _t: asyncio.ensure_future(
                        _send(
                            reply_to,
                            {"type": "assistant.replied", "userMessageId": user_message_id, "state": status.snapshot()},
                        )
                    )
                )
        elif message.get("type") == "assistant.cancel" and reply_to:
            await _send(
                reply_to,
                {
                    "type": "assistant.cancel_answer",
                    "token": message.get("token"),
                    "accepted": brain.cancel(user_message_id),
                },
            )

    inbox = Inbox("assistant-brain-link", handle, group=ASSISTANT_GROUP)
    inbox.start()
    return inbox


# ---- a web process's side -----------------------------------------------------------------------


class RemoteBrain:
    """The side chat's hook in a web process of split mode: the brain is in the worker."""

    def __init__(self) -> None:
        self._replied: dict[str, set[asyncio.Event]] = {}
        self._replied_state: dict[str, dict[str, Any]] = {}  # the brain's status when it answered that row
        self._cancel_answers: dict[str, asyncio.Future] = {}
        self.inbox = Inbox("assistant-replies", self._handle)

    def start(self) -> None:
        self.inbox.start()

    async def stop(self) -> None:
        await self.inbox.stop()

    async def _handle(self, message: dict[str, Any]) -> None:
        if message.get("type") == "assistant.replied":
            user_message_id = str(message.get("userMessageId"))
            if user_message_id in self._replied and isinstance(message.get("state"), dict):
                self._replied_state[user_message_id] = message["state"]
            for replied in self._replied.get(user_message_id, ()):
                replied.set()
        elif message.get("type") == "assistant.cancel_answer":
            answer = self._cancel_answers.get(str(message.get("token")))
            if answer is not None and not answer.done():
                answer.set_result(bool(message.get("accepted")))

    async def _ask(self, message: dict[str, Any]) -> None:
        await _send_to_group({**message, "replyTo": self.inbox.channel})

    async def run(self, user_message_id: str) -> dict[str, Any] | None:
        """Return once the reply to ``user_message_id`` is stored (the side chat's own cap bounds it):
        the brain's status as the worker sent it with the reply, or None when the store was read
        first (the published status is then the one to show)."""
        replied = asyncio.Event()
        self._replied.setdefault(user_message_id, set()).add(replied)
        loop = asyncio.get_running_loop()
        try:
            asked_at = None
            while await db.read(conversation.reply_to)(user_message_id) is None:
                if asked_at is None or loop.time() - asked_at >= ASK_AGAIN_SECONDS:
                    await self._ask({"type": "assistant.run", "userMessageId": user_message_id})
                    asked_at = loop.time()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(replied.wait(), REPLY_POLL_SECONDS)
                replied.clear()
            return self._replied_state.get(user_message_id)
        finally:
            waiting = self._replied.get(user_message_id, set())
            waiting.discard(replied)
            if not waiting:
                self._replied.pop(user_message_id, None)
                self._replied_state.pop(user_message_id, None)

    async def cancel(self, user_message_id: str) -> bool:
        """The worker's answer; False when it does not answer in time (no worker, a lost message)."""
        token = secrets.token_hex(8)
        answer = self._cancel_answers[token] = asyncio.get_running_loop().create_future()
        try:
            await self._ask({"type": "assistant.cancel", "userMessageId": user_message_id, "token": token})
            return await asyncio.wait_for(answer, CANCEL_ANSWER_SECONDS)
        except TimeoutError:
            return False
        finally:
            self._cancel_answers.pop(token, None)

    async def state(self) -> dict[str, Any]:
        return await db.read(stored_state)()


async def _send_to_group(message: dict[str, Any]) -> None:
    try:
        await layer.channel_layer().group_send(ASSISTANT_GROUP, message)
    except Exception as error:  # noqa: BLE001 - sent again at the next ASK_AGAIN_SECONDS
        logger.warning("assistant: %s was not sent to the worker (%s)", message.get("type"), error)


def stored_state() -> dict[str, Any]:
    """The brain's status as the worker that owns the room published it beside its lease; with no
    live owner, ``starting`` and a detail that says no worker owns the room."""
    worker = lease.describe()
    if worker["owner"] is None:
        return status.shown("starting", NO_WORKER_DETAIL)
    published = worker["agentsHealth"].get(status.PUBLISHED_AS) or {}
    return status.shown(published.get("status") or "starting", published.get("detail"))

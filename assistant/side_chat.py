"""What the side-chat REST views do (FEATURES §13, PROTOCOL §10.7): status, history, a message and
its answer, cancel. The rows are ``assistant/conversation.py``'s; the brain is reached through the
hook (``assistant/brain_hook.py``), never directly.

A message waits for its answer at most ``ANSWER_WAIT_SECONDS``; past that the answer is
``status: busy`` without ``assistantMessage`` (the run goes on, the reply lands in the history, and
the same clientCommandId joins it again).
"""

from __future__ import annotations

import asyncio
from typing import Any

from assistant import brain_hook, brain_runtime, conversation
from assistant.conversation import SideMessage
from groupx_site.core.errors import GroupXError
from groupx_site.core.ids import WEB_BINDING_ID
from groupx_site.store import db

ANSWER_WAIT_SECONDS = 300.0
NOT_READY = ("disabled", "starting")


async def assistant_state() -> dict[str, Any]:
    return {"enabled": brain_runtime.enabled(), "name": brain_runtime.display_name(), **await brain_hook.state()}


async def post_message(message: SideMessage) -> dict[str, Any]:
    state = await brain_hook.state()
    if state["status"] in NOT_READY or not brain_hook.available():
        # Nothing is written: a disabled assistant saved as enabled reads restart_required, and
        # still has no brain to answer until GroupX restarts.
        raise GroupXError(
            "SESSION_NOT_AVAILABLE", f"the room assistant is {state['status']}", details={"status": state["status"]}
        )
    recorded = await db.write(conversation.record_user_message)(WEB_BINDING_ID, message)
    user = recorded["userMessage"]
    reply = await db.read(conversation.reply_to)(user["messageId"])
    answered_state = None
    if reply is None:
        # A user row without a reply (new, in flight, or left by a crash) runs the brain, or joins
        # the run already answering it; the row itself is never written twice.
        run = asyncio.ensure_future(brain_hook.run(user["messageId"]))
        done, _ = await asyncio.wait({run}, timeout=ANSWER_WAIT_SECONDS)
        if run in done:
            answered_state = run.result()  # raises SESSION_NOT_AVAILABLE when no runtime runs the brain
        else:  # stop waiting, not the run: a local brain's run is shielded, a worker's goes on there
            run.cancel()
        reply = await db.read(conversation.reply_to)(user["messageId"])
    state = await brain_hook.state()
    if answered_state is not None and state["status"] != "restart_required":
        state = answered_state
    answer: dict[str, Any] = {"userMessage": user, **state}
    if reply is not None:
        answer["assistantMessage"] = reply
    else:
        answer["detail"] = "still answering: the reply will appear in GET /api/assistant/messages"
    return answer


async def cancel(client_command_id: str) -> dict[str, Any]:
    user_message_id = await db.read(conversation.user_message_of)(client_command_id)
    return {"accepted": user_message_id is not None and await brain_hook.cancel(user_message_id)}

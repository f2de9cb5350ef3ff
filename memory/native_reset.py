"""Native-session resets (FEATURES §14 ``resetNativeSessions``, docs/DECISIONS.md D41).

A context reset with ``resetNativeSessions: true`` is recorded as a ``ContextReset`` row with
``reset_native_sessions`` set. From then on no agent resumes a native session born before it:
``mark()`` is what a live session compares itself with (a session started under an older mark is
closed before its agent's next Turn), and ``latest()`` also gives the moment before which native
session ids are never resumed again (they stay recorded on their bindings).

Memory may not reach the agent runtime (docs/ARCHITECTURE.md "Layers"): a reset wakes it over
the channel layer after its commit (``agents.native_reset``, docs/DECISIONS.md D43) so idle agents
renew their sessions at once. A reset written by a process that serves no layer
(``manage.py reset_context --native``) wakes nobody; the lanes find its mark before their next Turn.
"""

from __future__ import annotations

from datetime import datetime

from groupx_site.store import layer
from memory import sql as memory_sql
from memory.models import ContextReset
from rooms.models import ROOM_ID


def latest() -> tuple[int, datetime | None]:
    """(the latest native reset's floor, when it was written); (0, None) when there was none. The
    floor only grows; native sessions born before that moment are never resumed."""
    # ContextReset orders by -through_seq, and a later reset always has a higher floor.
    found = (
        ContextReset.objects.filter(room_id=ROOM_ID, reset_native_sessions=True)
        .values_list("through_seq", "created_at")
        .first()
    )
    return found if found is not None else (0, None)


def mark() -> int:
    """The floor of the latest native reset, 0 when there was none (a fixed statement: every lane
    reads it before every Turn)."""
    return memory_sql.native_reset_mark(ROOM_ID)


def notify_on_commit() -> None:
    layer.wake_agents_on_commit({"type": "agents.native_reset"})

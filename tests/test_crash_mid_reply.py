"""A crash mid-reply keeps what was checkpointed (docs/ARCHITECTURE.md "The dispatch path"): the
lane stores the partial reply every 4,096 characters, so a server SIGKILLed while an agent is
answering loses at most the characters after the last checkpoint, and restart recovery ends the
Turn ``interrupted`` with that text kept (PROTOCOL §5).

A real server, a fake ACP CLI streaming over its real wire, a real SIGKILL and a start on the same
room."""

from __future__ import annotations

from tests.agents import db_rows, fake_agents, send, wait_terminal
from tests.server import wait_until

CHECKPOINTED = "A" * 5_000  # five chunks of 1,000: the fifth passes 4,096, and the whole text is stored
TAIL = "after-the-checkpoint"  # under 4,096 more characters: never checkpointed


def partial_text(server, turn_id: str) -> str | None:
    rows = db_rows(server, "SELECT partial_text FROM turns_turn WHERE turn_id = ?", turn_id)
    return rows[0]["partial_text"] if rows else None


def test_a_reply_cut_by_a_sigkill_keeps_its_checkpointed_text_after_the_restart(make_server, tmp_path):
    room = make_server(fake_agents(tmp_path, "kimi"))
    turn_id = send(
        room, "agent:kimi", f"[[fake: reply text={CHECKPOINTED} chunks=5; reply text={TAIL}; hang emit_first=0]]"
    )["turns"][0]["turnId"]
    wait_until(lambda: partial_text(room, turn_id), timeout=30, message="the first checkpoint of the reply")

    port = room.port
    room.kill()  # SIGKILL: no shutdown path runs, nothing is written on the way out
    assert partial_text(room, turn_id) == CHECKPOINTED  # durable before the crash, the tail never was
    room.start(port=port)

    ended = wait_terminal(room, turn_id)
    assert ended["type"] == "turn.interrupted" and ended["body"]["errorCode"] == "TURN_INTERRUPTED"
    assert partial_text(room, turn_id) == CHECKPOINTED
    [row] = db_rows(room, "SELECT status FROM turns_turn WHERE turn_id = ?", turn_id)
    assert row["status"] == "interrupted"

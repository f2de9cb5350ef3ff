"""PostgreSQL's text cannot hold U+0000, SQLite's can (docs/DECISIONS.md D53): on PostgreSQL a NUL in a
message or a memory is stored as U+FFFD, as a lone surrogate is repaired, instead of failing the
write with a 500 (which it did before the repair)."""

from __future__ import annotations

import uuid

from tests.agents import send


def test_a_nul_in_a_message_and_a_memory_is_stored_as_a_replacement_character(make_server):
    room = make_server()
    accepted = send(room, "agent:sleeper", "before\x00after")
    memory = room.post(
        "/api/memory",
        {
            "clientCommandId": f"nul-{uuid.uuid4()}",
            "kind": "fact",
            "scope": {"type": "room", "id": "room:main"},
            "content": "half\x00way",
        },
    )
    assert memory.status_code == 201, memory.text

    message = next(e for e in room.events() if e["eventId"] == accepted["messageEventId"])
    assert message["body"]["content"] == "before\ufffdafter"
    found = room.get("/api/memory", params={"query": "half\x00way"}).json()["items"]
    assert [m["content"] for m in found] == ["half\ufffdway"]

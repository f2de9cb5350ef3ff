"""manage.py replay_events prints the durable log as JSON lines."""

from __future__ import annotations

import json
import uuid


def test_it_prints_events_from_a_seq_filtered_by_type_and_correlation(make_server):
    server = make_server()
    first = server.post(
        "/api/messages", {"clientCommandId": str(uuid.uuid4()), "to": ["agent:sleeper"], "content": "one"}
    ).json()
    server.post("/api/messages", {"clientCommandId": str(uuid.uuid4()), "to": ["agent:sleeper"], "content": "two"})

    every = [json.loads(line) for line in server.manage("replay_events").stdout.splitlines()]
    head = every[-1]["seq"]
    assert [e["seq"] for e in every] == list(range(1, head + 1))

    later = [json.loads(line) for line in server.manage("replay_events", "--after-seq", "2").stdout.splitlines()]
    assert [e["seq"] for e in later] == list(range(3, head + 1))

    messages = server.manage("replay_events", "--type", "message.*").stdout.splitlines()
    assert [json.loads(line)["body"]["content"] for line in messages] == ["one", "two"]

    chain = server.manage("replay_events", "--correlation", first["correlationId"]).stdout.splitlines()
    assert [json.loads(line)["type"] for line in chain] == ["message.created", "turn.queued"]

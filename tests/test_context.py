"""The Room Context Engine: usage, automatic and manual compaction, reset.

The summariser is a fake CLI started by GroupX in its own short-lived, MCP-free process; what it
answers comes from the agent's ``.groupx-fake.json`` ``default_turn`` (GroupX's summariser prompt
has nothing fake-specific in it). What each agent was told is read from the fakes' wire logs.
"""

from __future__ import annotations

import json
import re
import uuid

import pytest

from tests.agents import db_rows, fake_agents, prompts_sent, send, wait_terminal
from tests.server import wait_until
from tests.sse import SseClient


def command_id() -> str:
    return f"c-{uuid.uuid4()}"


def prompt_texts(server, flavor: str, marker: str) -> list[str]:
    texts = [block["text"] for msg in prompts_sent(server, flavor) for block in msg["params"]["prompt"]]
    return [t for t in texts if t.startswith(marker)]


def packets(server, flavor: str) -> list[str]:
    return prompt_texts(server, flavor, "[groupx_protocol]")


def summariser_prompts(server, flavor: str) -> list[str]:
    return prompt_texts(server, flavor, "[groupx_room_compaction]")


def chat(server, target: str, count: int, *, size: int = 0, label: str = "history") -> None:
    """``count`` completed Turns: each adds the user's message and the agent's reply."""
    for i in range(count):
        text = f"[[fake: reason n=1; reply text=noted-{i}]] {label}-{i} " + "." * size  # reasoning: "thinking-1"
        assert wait_terminal(server, send(server, target, text)["turns"][0]["turnId"])["type"] == "turn.completed"


def active_summaries(server) -> list[dict]:
    return db_rows(server, "SELECT * FROM memory_summary WHERE status = 'active'")


def ready(server, *actors: str) -> None:
    wait_until(
        lambda: (
            {a["actorId"] for a in server.get("/api/health").json()["agents"] if a["status"] == "ready"} >= set(actors)
        ),
        timeout=20,
        message="agents ready",
    )


def test_usage_counts_the_room_messages_by_the_protocol_formula(make_server, tmp_path):
    room = make_server(fake_agents(tmp_path, "kimi"))
    assert room.get("/api/context").json()["estimatedCharacters"] == 160

    chat(room, "agent:kimi", 2)
    usage = room.get("/api/context").json()

    messages = [e for e in room.events() if e["type"] == "message.created"]
    expected = 160 + sum(
        len(m["body"]["content"])
        + len(m["actor"]["actorId"])
        + len(m["actor"]["displayName"])
        + len(m["occurredAt"])
        + 96
        for m in messages
    )
    assert usage["estimatedCharacters"] == expected
    assert usage["maxCharacters"] == 256_000 and usage["compactionTriggerCharacters"] == 192_000
    assert usage["uncompactedMessageCount"] == 4 and usage["compactable"] is False
    assert usage["throughSeq"] == room.events()[-1]["seq"] and usage["roomId"] == "room:main"


def test_a_long_room_is_compacted_automatically_and_the_next_packet_carries_the_summary_its_attempt_records(
    make_server, tmp_path
):
    scenarios = {"kimi": {"default_turn": ["reply text=SUMMARY-OK"]}}
    room = make_server(
        fake_agents(tmp_path, "kimi", "hermes", "grok", scenarios=scenarios), limits={"contextCharacters": 4_000}
    )
    ready(room, "agent:kimi", "agent:hermes", "agent:grok")
    chat(room, "agent:grok", 8, size=400)  # grok reads along turn by turn; its packets stay small
    assert room.get("/api/context").json()["utilizationPercent"] == 100

    turn = send(room, "agent:hermes", "[[fake: reply text=done]] what did we settle?")["turns"][0]["turnId"]
    assert wait_terminal(room, turn, timeout=60)["type"] == "turn.completed"

    summary = active_summaries(room)
    assert len(summary) == 1 and summary[0]["content"] == "SUMMARY-OK"
    assert summary[0]["generator_actor_id"] == "agent:kimi"  # the first healthy agent in config order
    packet = packets(room, "hermes")[-1]
    assert "[room_checkpoint_summary]" in packet and "SUMMARY-OK" in packet
    # The attempt records the checkpoint it carried, and its delivery moves the cursor's summary
    # mark with the cursor (FEATURES §7 step 7, §14, §18).
    attempt = db_rows(room, "SELECT summary_through_seq FROM turns_turnattempt WHERE turn_id = ?", turn)[0]
    assert attempt["summary_through_seq"] == summary[0]["through_seq"]
    cursor = db_rows(room, "SELECT last_summary_seq FROM agents_deliverycursor WHERE actor_id = 'agent:hermes'")[0]
    assert cursor["last_summary_seq"] == summary[0]["through_seq"]
    assert {
        row["summary_through_seq"]
        for row in db_rows(
            room,
            "SELECT a.summary_through_seq FROM turns_turnattempt a JOIN turns_turn t USING (turn_id)"
            " WHERE t.target_actor_id = 'agent:grok'",
        )
    } == {None}  # grok's packets carried no summary
    assert "history-0" not in packet and "history-7" in packet  # the oldest went into the summary
    assert packet.endswith("[current_message]\n[[fake: reply text=done]] what did we settle?")
    assert len(packet) <= 4_000
    summariser = summariser_prompts(room, "kimi")
    assert summariser and "history-0" in summariser[0]
    assert not any("thinking-1" in text for text in summariser + [packet])  # reasoning never enters
    assert not any("[groupx_room_compaction]" in str(m) for m in prompts_sent(room, "grok"))
    usage = room.get("/api/context").json()
    assert usage["summaryThroughSeq"] == summary[0]["through_seq"]
    assert usage["estimatedCharacters"] < usage["compactionTriggerCharacters"]
    # Dated-memory sources the compaction passed were flushed first (best effort) by their owner.
    assert (
        db_rows(
            room,
            "SELECT 1 FROM memory_datedmemorysource WHERE actor_id = 'agent:grok' AND processed_at IS NULL"
            " AND source_seq <= ?",
            summary[0]["through_seq"],
        )
        == []
    )


def test_manual_compaction_keeps_the_last_twelve_messages_and_is_single_flight(make_server, tmp_path):
    room = make_server(fake_agents(tmp_path, "kimi", scenarios={"kimi": {"default_turn": ["reply text=MANUAL-SUM"]}}))
    chat(room, "agent:kimi", 7)  # 14 room messages
    body = {"clientCommandId": command_id()}

    with SseClient(room.base_url, after_seq=room.events()[-1]["seq"]) as stream:
        response = room.post("/api/context/compact", body, timeout=60)
        stream.wait_for(lambda e: e["type"] == "context.compaction.completed", message="compaction completed")
        progress = [e["type"] for e in stream.transient if e["type"].startswith("context.compaction.")]

    assert response.status_code == 200, response.text
    result = response.json()
    assert result["compacted"] is True and "MANUAL-SUM" not in response.text  # no summary text
    assert result["usage"]["uncompactedMessageCount"] == 12 and result["usage"]["compactable"] is False
    messages = [e for e in room.events() if e["type"] == "message.created"]
    assert result["usage"]["summaryThroughSeq"] == messages[1]["seq"]
    assert progress == ["context.compaction.started", "context.compaction.completed"]
    assert room.post("/api/context/compact", body, timeout=60).json() == result  # replayed, not re-run
    assert len(db_rows(room, "SELECT 1 FROM memory_summary")) == 1
    again = room.post("/api/context/compact", {"clientCommandId": command_id()}, timeout=60).json()
    assert again["compacted"] is False
    refused = room.post("/api/context/compact", {"clientCommandId": command_id(), "keep": 3})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "INVALID_ENVELOPE"


def test_a_failing_summariser_leaves_the_active_summary_untouched(make_server, tmp_path):
    room = make_server(fake_agents(tmp_path, "kimi", scenarios={"kimi": {"default_turn": ["reply text=FIRST-SUM"]}}))
    chat(room, "agent:kimi", 7)
    assert room.post("/api/context/compact", {"clientCommandId": command_id()}, timeout=60).json()["compacted"]
    before = active_summaries(room)
    (tmp_path / "cwd-kimi" / ".groupx-fake.json").write_text(json.dumps({"default_turn": ["fail"]}))
    chat(room, "agent:kimi", 2, label="later")

    with SseClient(room.base_url, after_seq=room.events()[-1]["seq"]) as stream:
        failed = room.post("/api/context/compact", {"clientCommandId": command_id()}, timeout=60)
        event = stream.wait_for(lambda e: e["type"] == "context.compaction.failed", message="compaction failed")

    assert failed.status_code == 503 and failed.json()["error"]["code"] == "TURN_INTERRUPTED"
    assert event["seq"] is None and event["body"]["errorCode"] == "TURN_INTERRUPTED"
    assert active_summaries(room) == before and before[0]["content"] == "FIRST-SUM"
    assert room.get("/api/context").json()["uncompactedMessageCount"] == 16


def test_reset_moves_the_floor_and_a_second_reset_without_news_is_a_no_op(make_server, tmp_path):
    room = make_server(fake_agents(tmp_path, "kimi", "hermes"))
    chat(room, "agent:kimi", 2, label="before-reset")

    reset = room.post("/api/context/reset", {"clientCommandId": command_id()})
    assert reset.status_code == 200, reset.text
    result = reset.json()
    floor_event = [e for e in room.events() if e["type"] == "context.reset"]
    assert result["reset"] is True and result["usage"]["uncompactedMessageCount"] == 0
    assert len(floor_event) == 1 and floor_event[0]["body"] == {
        "throughSeq": result["throughSeq"],
        "resetNativeSessions": False,
    }
    assert floor_event[0]["actor"]["actorId"] == "system:groupx" and floor_event[0]["seq"] > result["throughSeq"]
    assert room.post("/api/context/reset", {"clientCommandId": command_id()}).json()["reset"] is False

    wait_terminal(room, send(room, "agent:hermes", "fresh start")["turns"][0]["turnId"])
    packet = packets(room, "hermes")[-1]
    assert "before-reset" not in packet and f"after_seq: {result['throughSeq']}" in packet
    assert room.get("/api/context").json()["resetThroughSeq"] == result["throughSeq"]


def test_the_management_commands_compact_and_reset_and_say_what_they_did(make_server, tmp_path):
    room = make_server(fake_agents(tmp_path, "kimi", scenarios={"kimi": {"default_turn": ["reply text=CLI-SUM"]}}))
    chat(room, "agent:kimi", 7)

    compacted = room.manage("compact_context", timeout=120)
    assert compacted.stdout.startswith("compacted: summary now covers through seq")
    assert [s["content"] for s in active_summaries(room)] == ["CLI-SUM"]
    assert room.manage("compact_context").stdout.startswith("nothing to compact")
    reset = room.manage("reset_context")
    assert reset.stdout.startswith("context reset: floor moved to seq")
    assert active_summaries(room) == []
    assert room.manage("reset_context").stdout.startswith("nothing to reset")


@pytest.mark.parametrize(
    "body",
    [
        {"clientCommandId": "r", "from": "user:web"},
        {"clientCommandId": "r", "x": 1},
        {"clientCommandId": "r", "resetNativeSessions": "yes"},
    ],
)
def test_a_malformed_reset_is_refused(room, body):
    response = room.post("/api/context/reset", body)
    assert response.status_code == 400


def test_a_reply_chain_is_shown_once_and_the_unread_delta_holds_the_rest_in_order(make_server, tmp_path):
    # The delta excludes the reply chain's events (one fixed statement, memory/sql.py): a message
    # must appear in [reply_chain] or in [room_delta_since_cursor], never both.
    room = make_server(fake_agents(tmp_path, "kimi", "grok"))
    ready(room, "agent:kimi", "agent:grok")
    root = send(room, "agent:grok", "[[fake: reply text=grok-one]] chain-root")
    assert wait_terminal(room, root["turns"][0]["turnId"])["type"] == "turn.completed"
    other = send(room, "agent:grok", "[[fake: reply text=grok-two]] unrelated")
    assert wait_terminal(room, other["turns"][0]["turnId"])["type"] == "turn.completed"

    ask = send(room, "agent:kimi", "[[fake: reply text=kimi]] about the root", replyToEventId=root["messageEventId"])
    assert wait_terminal(room, ask["turns"][0]["turnId"])["type"] == "turn.completed"

    packet = packets(room, "kimi")[-1]
    chain = packet.split("[reply_chain]\n", 1)[1].split("\n\n[current_message]", 1)[0]
    delta = packet.split("[room_delta_since_cursor]\n", 1)[1].split("\n\n[reply_chain]", 1)[0]
    assert chain.startswith(f"- id={root['messageEventId']} ") and "chain-root" in chain
    assert f"- id={root['messageEventId']} " not in delta and "chain-root" not in delta
    assert all(text in delta for text in ("grok-one", "unrelated", "grok-two"))
    seqs = [int(seq) for seq in re.findall(r"^- id=\S+ seq=(\d+) ", delta, re.MULTILINE)]
    assert len(seqs) >= 3 and seqs == sorted(seqs)


def test_a_message_larger_than_the_whole_context_budget_fails_its_turn_with_context_budget_exceeded(
    make_server, tmp_path
):
    room = make_server(fake_agents(tmp_path, "kimi"), limits={"contextCharacters": 1_024})
    ready(room, "agent:kimi")

    turn_id = send(room, "agent:kimi", "x" * 2_000)["turns"][0]["turnId"]
    terminal = wait_terminal(room, turn_id)

    assert terminal["type"] == "turn.failed"
    assert terminal["body"]["errorCode"] == "CONTEXT_BUDGET_EXCEEDED"
    assert "1024" in terminal["body"]["message"]  # says what the budget is
    assert not any("x" * 2_000 in str(p) for p in prompts_sent(room, "kimi"))  # never sent
    assert wait_terminal(room, send(room, "agent:kimi", "small")["turns"][0]["turnId"])["type"] == "turn.completed"

"""Supervision pairing against real servers and fake CLIs over their real wires (FEATURES §12,
PROTOCOL §4.3, §6.7).

The fakes call watch and steer for real (an ``mcp`` directive is a real MCP tools/call); what each
call returned is read from the fake's wire log, what it did from the room's events.
"""

from __future__ import annotations

import json
import uuid

import pytest

from tests.agents import db_rows, fake_agents, mcp_calls, send, tool_payload, turn_events, wait_terminal

PAIR = {"observers": ["agent:beta"], "mode": "live_steer"}


def message(**fields) -> dict:
    return {"clientCommandId": f"web-{uuid.uuid4()}", "to": ["agent:alpha"], "content": "write it", **fields}


def mcp(tool: str, **args) -> str:
    """One fake directive: a real MCP call of ``tool`` with ``args``."""
    return f"mcp tool={tool} args='{json.dumps(args)}'"


def pair_rows(server) -> int:
    return db_rows(server, "SELECT COUNT(*) AS n FROM supervision_pairs")[0]["n"]


# ---- every validation path of a web post, with its code and nothing written ------------------------


@pytest.mark.parametrize(
    ("supervision", "to", "code"),
    [
        ({"observers": ["agent:beta"]}, ["agent:alpha"], "INVALID_ENVELOPE"),  # no mode
        ({"observers": ["agent:beta"], "mode": "review"}, ["agent:alpha"], "INVALID_ENVELOPE"),
        ({"observers": [], "mode": "live_steer"}, ["agent:alpha"], "INVALID_ENVELOPE"),
        ({"observers": [f"agent:o{n}" for n in range(5)], "mode": "live_steer"}, ["agent:alpha"], "INVALID_ENVELOPE"),
        ({"observers": ["agent:beta", "agent:beta"], "mode": "live_steer"}, ["agent:alpha"], "INVALID_ENVELOPE"),
        ({"observers": ["agent:alpha"], "mode": "live_steer"}, ["agent:alpha"], "INVALID_ENVELOPE"),  # overlaps to
        ({"observers": ["agent:beta"], "mode": "live_steer", "loop": 2}, ["agent:alpha"], "INVALID_ENVELOPE"),
        (["agent:beta"], ["agent:alpha"], "INVALID_ENVELOPE"),
        ({"observers": ["user:assistant"], "mode": "live_steer"}, ["agent:alpha"], "SUPERVISION_PAIR_INVALID"),
        (PAIR, ["@all"], "SUPERVISION_PAIR_INVALID"),  # @all chose the observer as a worker too
    ],
)
def test_a_bad_supervision_is_refused_with_its_code_and_writes_nothing(room, supervision, to, code):
    before = (len(room.events()), pair_rows(room))

    response = room.post("/api/messages", message(to=to, supervision=supervision))

    assert (response.status_code, response.json()["error"]["code"]) == (400, code)
    assert (len(room.events()), pair_rows(room)) == before


@pytest.mark.parametrize("observer", ["agent:off", "agent:nobody"])  # disabled, never configured
def test_an_observer_that_is_not_an_enabled_agent_is_an_unknown_target_like_a_worker(room, observer):
    before = (len(room.events()), pair_rows(room))

    response = room.post(
        "/api/messages", message(to=["agent:alpha"], supervision={"observers": [observer], "mode": "live_steer"})
    )
    as_worker = room.post("/api/messages", message(to=[observer]))

    error = response.json()["error"]
    assert (response.status_code, error["code"]) == (404, "UNKNOWN_TARGET")
    assert error["details"]["unknownTargets"] == [observer]
    assert (as_worker.status_code, as_worker.json()["error"]["code"]) == (404, "UNKNOWN_TARGET")
    assert (len(room.events()), pair_rows(room)) == before


def test_a_paired_post_answers_the_watch_extras_and_writes_the_pair_in_seq_order(room):
    response = room.post("/api/messages", message(to=["agent:alpha"], supervision=PAIR))

    assert response.status_code == 202
    body = response.json()
    assert [t["target"] for t in body["turns"]] == ["agent:alpha"]
    assert [(t["target"], t["status"]) for t in body["watchTurns"]] == [("agent:beta", "queued")]
    written = [e for e in room.events() if e["rootCorrelationId"] == body["correlationId"]]
    assert [e["type"] for e in written] == [
        "message.created",
        "turn.queued",
        "message.created",
        "turn.queued",
        "supervision.paired",
    ]
    brief, paired = written[2], written[4]
    assert (brief["eventId"], paired["eventId"]) == (body["watchEventId"], body["pairEventId"])
    assert brief["actor"]["actorId"] == "system:groupx" and brief["to"] == ["agent:beta"]
    assert brief["body"]["kind"] == "supervision.watch" and "write it" in brief["body"]["content"]
    assert paired["body"]["workers"] == [{"actorId": "agent:alpha", "turnId": body["turns"][0]["turnId"]}]
    assert paired["body"]["observers"] == [{"actorId": "agent:beta", "turnId": body["watchTurns"][0]["turnId"]}]
    rows = db_rows(
        room,
        "SELECT role, actor_id FROM supervision_pair_turns t JOIN supervision_pairs p "
        "ON p.pair_id = t.pair_id WHERE p.pair_event_id = ? ORDER BY role",
        body["pairEventId"],
    )
    assert rows == [{"role": "observer", "actor_id": "agent:beta"}, {"role": "worker", "actor_id": "agent:alpha"}]


# ---- a pair end to end: an agent pairs through MCP send, the observer watches and steers ------------


def test_an_agent_pairs_an_observer_that_watches_nudges_interrupts_and_sees_the_end(make_server, tmp_path):
    observer_script = [
        mcp("watch", until="next_milestone", afterSeq=0, timeoutMs=20_000),
        mcp(
            "steer",
            action="nudge",
            reason="cover the tests too",
            content="[[fake: reply text=nudged]]",
            clientCommandId="steer-1",
        ),
        mcp(
            "steer",
            action="interrupt",
            reason="wrong file, start over",
            content="[[fake: reply text=redone]]",
            clientCommandId="steer-2",
        ),
        mcp("watch", until="terminal", timeoutMs=20_000),
    ]
    room = make_server(
        fake_agents(
            tmp_path,
            "kimi",
            "hermes",
            "grok",
            scenarios={"hermes": {"default_turn": ["hang"]}, "grok": {"default_turn": observer_script}},
        )
    )
    pairing = mcp(
        "send",
        to=["agent:hermes"],
        content="draft the report",
        clientCommandId="pair-1",
        supervision={"observers": ["agent:grok"], "mode": "live_steer"},
    )

    kimi_turn = send(room, "agent:kimi", f"[[fake: {pairing}]]")["turns"][0]["turnId"]
    assert wait_terminal(room, kimi_turn)["type"] == "turn.completed"
    sent = tool_payload(mcp_calls(room, "kimi", "send")[0])
    [worker] = sent["turns"]
    [watcher] = sent["watchTurns"]
    assert sent["watchEventId"] and sent["pairEventId"]
    assert wait_terminal(room, watcher["turnId"], timeout=60)["type"] == "turn.completed"

    first_watch, nudge, interrupt, last_watch = [tool_payload(c) for c in mcp_calls(room, "grok")]
    seen = first_watch["snapshot"]
    assert (seen["turnId"], seen["status"], seen["terminal"]) == (worker["turnId"], "running", False)
    assert seen["task"]["excerpt"] == "draft the report"
    assert set(seen) <= {
        "turnId",
        "targetActorId",
        "status",
        "deliveryCertainty",
        "lastSeq",
        "watchCursor",
        "terminal",
        "subjectCancelled",
        "task",
        "messages",
        "tools",
        "steerCount",
        "lastSteerReason",
    }
    assert (nudge["action"], nudge["subjectTurnId"], nudge["steerCount"]) == ("nudge", worker["turnId"], 1)
    assert (interrupt["action"], interrupt["subjectTurnId"], interrupt["steerCount"]) == (
        "interrupt",
        worker["turnId"],
        2,
    )
    assert wait_terminal(room, worker["turnId"])["type"] == "turn.cancelled"  # the whole Turn
    assert last_watch["snapshot"]["terminal"] and not last_watch["timedOut"]
    assert last_watch["snapshot"]["turnId"] in (nudge["nextTurnId"], interrupt["nextTurnId"])

    # The guidance runs as the worker's next Turns, one hop below the Watch Turn.
    for steer in (nudge, interrupt):
        assert wait_terminal(room, steer["nextTurnId"])["type"] == "turn.completed"
    queued = {e["body"]["turnId"]: e["body"]["hopCount"] for e in room.events() if e["type"] == "turn.queued"}
    assert queued[watcher["turnId"]] == queued[worker["turnId"]] == 1
    assert queued[nudge["nextTurnId"]] == queued[interrupt["nextTurnId"]] == 2
    steered = [e["body"] for e in room.events() if e["type"] == "supervision.steered"]
    assert [(s["action"], s["reason"]) for s in steered] == [
        ("nudge", "cover the tests too"),
        ("interrupt", "wrong file, start over"),
    ]
    observed = [e for e in room.events() if e["type"] == "supervision.observed"]
    assert len(observed) == 2 and {e["actor"]["actorId"] for e in observed} == {"agent:grok"}

    # PROTOCOL §6.7: each steered Turn is caused by its steer event (its guidance too); its parent
    # Turn is the Watch Turn (FEATURES §12), which caused the steer.
    by_id = {e["eventId"]: e for e in room.events()}
    for steer in (nudge, interrupt):
        queued_event = next(
            e for e in by_id.values() if e["type"] == "turn.queued" and e["body"]["turnId"] == steer["nextTurnId"]
        )
        assert queued_event["causationId"] == steer["steerEventId"]
        assert by_id[steer["messageEventId"]]["causationId"] == steer["steerEventId"]
        assert by_id[steer["steerEventId"]]["type"] == "supervision.steered"
        assert by_id[steer["steerEventId"]]["causationId"] == watcher["turnId"]
        [row] = db_rows(room, "SELECT parent_turn_id FROM turns_turn WHERE turn_id = ?", steer["nextTurnId"])
        assert row["parent_turn_id"] == watcher["turnId"]


def test_a_steer_past_the_limit_is_refused_with_steer_limit_reached(make_server, tmp_path):
    observer_script = [
        mcp("watch", afterSeq=0, timeoutMs=20_000),
        # Both steer the running Turn (a nudge leaves it running, so it stays the current worker).
        mcp("steer", action="nudge", reason="first", content="[[fake: reply text=one]]", clientCommandId="s-1"),
        mcp("steer", action="nudge", reason="and more", content="[[fake: reply text=two]]", clientCommandId="s-2"),
    ]
    room = make_server(
        fake_agents(
            tmp_path,
            "hermes",
            "grok",
            scenarios={"hermes": {"default_turn": ["hang"]}, "grok": {"default_turn": observer_script}},
        ),
        limits={"steersPerSubjectTurn": 1},
    )

    accepted = send(
        room, "agent:hermes", "draft the report", supervision={"observers": ["agent:grok"], "mode": "live_steer"}
    )
    wait_terminal(room, accepted["watchTurns"][0]["turnId"], timeout=60)

    _, first, second = [tool_payload(c) for c in mcp_calls(room, "grok")]
    assert first["steerCount"] == 1
    assert (second["code"], second["details"]["limit"]) == ("STEER_LIMIT_REACHED", 1)
    assert len([e for e in room.events() if e["type"] == "supervision.steered"]) == 1


def test_a_watch_turn_that_sends_to_its_worker_is_told_to_steer_and_others_cannot_watch(make_server, tmp_path):
    room = make_server(
        fake_agents(
            tmp_path,
            "kimi",
            "hermes",
            "grok",
            scenarios={
                "hermes": {"default_turn": ["reply text=done"]},
                "grok": {
                    "default_turn": [
                        mcp("send", to=["agent:hermes"], content="do it my way", clientCommandId="x-1"),
                        mcp("read"),
                    ]
                },
            },
        )
    )

    accepted = send(
        room, "agent:hermes", "draft the report", supervision={"observers": ["agent:grok"], "mode": "live_steer"}
    )
    wait_terminal(room, accepted["watchTurns"][0]["turnId"], timeout=60)
    refused, read = [tool_payload(c) for c in mcp_calls(room, "grok")]
    assert refused["code"] == "SUPERVISION_STEER_REQUIRED"
    assert "events" in read  # reading is still allowed

    business = send(
        room,
        "agent:kimi",
        "[[fake: "
        + mcp("watch")
        + "; "
        + mcp("steer", action="nudge", reason="r", content="c", clientCommandId="k-1")
        + "]]",
    )
    wait_terminal(room, business["turns"][0]["turnId"])
    assert [tool_payload(c)["code"] for c in mcp_calls(room, "kimi")] == ["SUPERVISION_WATCH_REQUIRED"] * 2


def test_an_agents_send_with_a_bad_supervision_gets_its_code_and_writes_nothing(make_server, tmp_path):
    room = make_server(fake_agents(tmp_path, "kimi", "hermes", "grok"))
    tries = [
        mcp(
            "send",
            to=["agent:hermes"],
            content="x",
            clientCommandId="a-1",
            supervision={"observers": ["agent:kimi"], "mode": "live_steer"},
        ),  # the caller itself
        mcp(
            "send",
            to=["agent:hermes"],
            content="x",
            clientCommandId="a-2",
            supervision={"observers": ["agent:hermes"], "mode": "live_steer"},
        ),  # overlaps to
        mcp("ask", to=["agent:hermes"], content="x", clientCommandId="a-3", supervision={"observers": ["agent:grok"]}),
        mcp(
            "publish",
            content="x",
            clientCommandId="a-4",
            supervision={"observers": ["agent:grok"], "mode": "live_steer"},
        ),
    ]

    turn = send(room, "agent:kimi", "[[fake: " + "; ".join(tries) + "]]")["turns"][0]["turnId"]
    wait_terminal(room, turn)

    codes = [tool_payload(c)["code"] for c in mcp_calls(room, "kimi")]
    assert codes == ["SUPERVISION_PAIR_INVALID", "INVALID_ENVELOPE", "INVALID_ENVELOPE", "INVALID_ENVELOPE"]
    written = [
        e["type"] for e in room.events() if e["rootCorrelationId"] == turn_events(room, turn)[0]["rootCorrelationId"]
    ]
    assert written.count("message.created") == 2  # the task and kimi's own reply: no send went through
    assert "supervision.paired" not in written and pair_rows(room) == 0

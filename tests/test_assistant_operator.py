"""The operator surface ``/mcp/operator`` (FEATURES §13, PROTOCOL §12): each of the 24 tools called
by the assistant's brain, the fake Claude CLI over its real MCP client, in a room of fake agents
(kimi and hermes answer; sleeper never starts, so its Turns stay queued). Nothing is mocked."""

from __future__ import annotations

import uuid

import pytest

from tests.agents import active_binding, db_rows, send, wait_terminal
from tests.assistant_room import assistant_room, operate, post_operator
from tests.server import hanging_agent, wait_until

OPERATOR_TOOLS = {
    "send",
    "read",
    "roster",
    "worker_dispatch",
    "worker_ask",
    "dispatch_event",
    "supervision_status",
    "turn_cancel",
    "turns_cancel",
    "agent_restart",
    "context_usage",
    "context_compact",
    "context_reset",
    "memory_search",
    "memory_remember",
    "memory_supersede",
    "memory_retract",
    "agent_core_remember",
    "identity_search",
    "identity_remember_for",
    "identity_supersede",
    "identity_retract",
    "setup_read",
    "setup_save",
}


def cid() -> str:
    return f"op-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def op(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("operator")
    server = assistant_room(workdir, "kimi", "hermes", agents_extra={"sleeper": hanging_agent(workdir)})
    yield server
    server.stop()


def events_of(server, event_type: str) -> list[dict]:
    return [e for e in server.events() if e["type"] == event_type]


# ---- the door ------------------------------------------------------------------------------------
def test_the_brains_session_lists_exactly_the_24_operator_tools(op):
    token = db_rows(
        op,
        "SELECT binding_id FROM agents_sessionbinding WHERE actor_id = 'user:assistant' "
        "AND status = 'active' AND transport = 'structured'",
    )[0]["binding_id"]
    answer = post_operator(op, token)
    assert answer.status_code == 200, answer.text
    assert {tool["name"] for tool in answer.json()["result"]["tools"]} == OPERATOR_TOOLS


@pytest.mark.parametrize("who", ["member", "fixed-operator-id", "none"])
def test_anything_but_the_brains_token_is_refused_with_binding_mismatch(op, who):
    binding = {"member": active_binding(op, "agent:kimi"), "fixed-operator-id": "binding:operator", "none": None}[who]
    refused = post_operator(op, binding)
    assert refused.status_code == 400
    assert refused.json()["error"]["data"]["code"] == "MCP_BINDING_MISMATCH"


def test_the_brains_token_is_not_a_member_binding(op):
    token = db_rows(
        op, "SELECT binding_id FROM agents_sessionbinding WHERE actor_id = 'user:assistant' AND status = 'active'"
    )[0]["binding_id"]
    from tests.agents import call_tool

    refused = call_tool(op, token, "read", {})
    assert refused.status_code == 400
    assert refused.json()["error"]["data"]["code"] == "MCP_BINDING_MISMATCH"


# ---- the room ------------------------------------------------------------------------------------
def test_send_posts_a_public_message_authored_by_the_assistant_as_operator(op):
    result = operate(op, "send", {"to": [], "content": "hello room", "clientCommandId": cid()})
    message = next(e for e in op.events() if e["eventId"] == result["messageEventId"])
    assert message["type"] == "message.created" and message["body"]["content"] == "hello room"
    assert message["actor"]["actorId"] == "user:assistant"
    assert message["provenance"]["sourceKind"] == "operator"


def test_worker_dispatch_writes_an_operator_dispatch_and_a_paired_turn_but_no_chat_bubble(op):
    messages_before = len(events_of(op, "message.created"))
    result = operate(
        op,
        "worker_dispatch",
        {
            "to": ["agent:kimi"],
            "content": "check the build",
            "clientCommandId": cid(),
            "supervision": {"observers": ["agent:hermes"], "mode": "live_steer"},
        },
    )
    dispatch = next(e for e in op.events() if e["eventId"] == result["dispatchEventId"])
    assert dispatch["type"] == "operator.dispatch"
    assert dispatch["actor"]["actorId"] == "user:assistant"
    assert dispatch["provenance"]["sourceKind"] == "operator"
    assert dispatch["body"] == {
        "content": "check the build",
        "operation": "worker_dispatch",
        "promptLength": len("check the build"),
        "targets": ["agent:kimi"],
    }
    worker = result["turns"][0]
    assert worker["target"] == "agent:kimi"
    assert result["watchTurns"] and result["pairEventId"]
    assert wait_terminal(op, worker["turnId"], timeout=60)["type"] == "turn.completed"
    # The worker's reply answers the dispatch, which was its current message.
    reply = [e for e in events_of(op, "message.created") if e["actor"]["actorId"] == "agent:kimi"][-1]
    assert reply["body"]["content"] == "echo: check the build"
    # The only new messages are the worker's reply and the pair's watch brief and observer's reply.
    new = events_of(op, "message.created")[messages_before:]
    assert all(m["actor"]["actorId"] != "user:assistant" for m in new)
    status = operate(op, "supervision_status", {"correlationId": result["correlationId"]})
    roles = {t["role"] for t in status["pairs"][0]["turns"]}
    assert roles == {"worker", "observer"}


def test_a_retried_worker_dispatch_with_the_same_command_id_dispatches_once(op):
    args = {"to": ["agent:sleeper"], "content": "only once", "clientCommandId": cid()}
    first = operate(op, "worker_dispatch", args)
    again = operate(op, "worker_dispatch", args)
    assert again == first
    assert len([e for e in events_of(op, "operator.dispatch") if e["body"]["content"] == "only once"]) == 1
    other = operate(op, "worker_dispatch", {**args, "content": "something else"})
    assert other["code"] == "CLIENT_COMMAND_CONFLICT"


def test_worker_ask_waits_and_returns_the_answers(op):
    result = operate(
        op, "worker_ask", {"to": ["agent:hermes"], "content": "status?", "clientCommandId": cid(), "timeoutMs": 60_000}
    )
    assert result["state"] == "terminal"
    assert result["results"][0]["content"] == "echo: status?"


def test_worker_ask_that_times_out_is_pending_and_says_poll_read(op):
    result = operate(
        op,
        "worker_ask",
        {"to": ["agent:sleeper"], "content": "are you there?", "clientCommandId": cid(), "timeoutMs": 200},
    )
    assert result["state"] == "pending"
    assert "poll read" in result["results"][0]["note"]


def test_dispatch_event_reroutes_a_room_message_keeping_its_author(op):
    posted = send(op, "agent:sleeper", "a question for whoever is free")
    result = operate(
        op,
        "dispatch_event",
        {"sourceEventId": posted["messageEventId"], "to": ["agent:hermes"], "clientCommandId": cid()},
    )
    turn = result["turns"][0]
    queued = next(e for e in events_of(op, "turn.queued") if e["body"]["turnId"] == turn["turnId"])
    assert queued["body"]["sourceEventId"] == posted["messageEventId"]
    assert wait_terminal(op, turn["turnId"], timeout=60)["type"] == "turn.completed"


def test_a_repeated_dispatch_event_to_an_agent_the_message_already_woke_is_a_duplicate_dispatch(op):
    posted = send(op, "agent:sleeper", "wake each agent once")
    first = operate(
        op,
        "dispatch_event",
        {"sourceEventId": posted["messageEventId"], "to": ["agent:kimi"], "clientCommandId": cid()},
    )
    assert first["turns"][0]["target"] == "agent:kimi"

    again = operate(
        op,
        "dispatch_event",
        {"sourceEventId": posted["messageEventId"], "to": ["agent:kimi"], "clientCommandId": cid()},
    )
    original_target = operate(
        op,
        "dispatch_event",
        {"sourceEventId": posted["messageEventId"], "to": ["agent:sleeper"], "clientCommandId": cid()},
    )

    assert again["code"] == original_target["code"] == "DUPLICATE_DISPATCH"
    assert again["details"]["targets"] == ["agent:kimi"] and original_target["details"]["targets"] == ["agent:sleeper"]
    queued = [e for e in events_of(op, "turn.queued") if e["body"]["sourceEventId"] == posted["messageEventId"]]
    assert len(queued) == 2  # the post's and the first re-route's: the refusals wrote nothing
    woken = db_rows(
        op,
        "SELECT target_actor_id FROM turns_turn WHERE source_event_id = ? ORDER BY target_actor_id",
        posted["messageEventId"],
    )
    assert [row["target_actor_id"] for row in woken] == ["agent:kimi", "agent:sleeper"]


def test_send_with_supervision_pairs_an_observer_with_the_workers_it_wakes(op):
    result = operate(
        op,
        "send",
        {
            "to": ["agent:sleeper"],
            "content": "watched work",
            "clientCommandId": cid(),
            "supervision": {"observers": ["agent:hermes"], "mode": "live_steer"},
        },
    )
    assert [t["target"] for t in result["turns"]] == ["agent:sleeper"]
    assert [t["target"] for t in result["watchTurns"]] == ["agent:hermes"]
    paired = next(e for e in op.events() if e["eventId"] == result["pairEventId"])
    assert paired["type"] == "supervision.paired"
    assert paired["body"]["sourceEventId"] == result["messageEventId"]
    assert paired["body"]["workers"] == [{"actorId": "agent:sleeper", "turnId": result["turns"][0]["turnId"]}]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (
            {"to": ["agent:sleeper"], "supervision": {"observers": ["agent:nobody"], "mode": "live_steer"}},
            "UNKNOWN_TARGET",
        ),
        ({"to": [], "supervision": {"observers": ["agent:hermes"], "mode": "live_steer"}}, "INVALID_ENVELOPE"),
    ],
)
def test_a_send_whose_supervision_cannot_be_paired_is_refused_and_writes_nothing(op, args, code):
    pairs_before = len(events_of(op, "supervision.paired"))
    content = f"not paired {cid()}"
    refused = operate(op, "send", {**args, "content": content, "clientCommandId": cid()})
    assert refused["code"] == code
    assert not [e for e in op.events() if (e["body"] or {}).get("content") == content]
    assert len(events_of(op, "supervision.paired")) == pairs_before


def test_dispatch_event_refuses_an_operator_dispatch_as_its_source(op):
    dispatched = operate(op, "worker_dispatch", {"to": ["agent:sleeper"], "content": "later", "clientCommandId": cid()})
    refused = operate(
        op,
        "dispatch_event",
        {"sourceEventId": dispatched["dispatchEventId"], "to": ["agent:hermes"], "clientCommandId": cid()},
    )
    assert refused["code"] == "INVALID_ENVELOPE"


def test_dispatch_event_refuses_a_watch_brief_as_its_source(op):
    brief = next(e for e in events_of(op, "message.created") if (e["body"] or {}).get("kind"))
    refused = operate(
        op, "dispatch_event", {"sourceEventId": brief["eventId"], "to": ["agent:hermes"], "clientCommandId": cid()}
    )
    assert refused["code"] == "INVALID_ENVELOPE"


def test_read_shows_only_public_meaning_with_content_cut(op):
    operate(op, "send", {"to": [], "content": "x" * 5_000, "clientCommandId": cid()})
    result = operate(op, "read", {"limit": 100})
    types = {e["type"] for e in result["events"]}
    assert "turn.reasoning.recorded" not in types and "tool.progress.recorded" not in types
    assert "turn.queued" not in types
    long = [e for e in result["events"] if e["body"].get("contentTruncated")]
    assert long and all(len(e["body"]["content"]) <= 2_001 for e in long)
    assert len(operate(op, "read", {})["events"]) <= 20


def test_a_sender_field_on_an_operator_write_is_refused(op):
    refused = operate(op, "send", {"to": [], "content": "hi", "clientCommandId": cid(), "from": "user:web"})
    assert refused["code"] == "SENDER_FIELD_FORBIDDEN"


def test_roster_lists_agents_active_turns_and_pairs(op):
    result = operate(op, "roster", {})
    agents = {a["actorId"]: a for a in result["agents"]}
    assert {"agent:kimi", "agent:hermes", "agent:sleeper"} <= set(agents)
    assert agents["agent:kimi"]["enabled"] and agents["agent:kimi"]["cwd"]
    assert any(t["target"] == "agent:sleeper" for t in result["activeTurns"])
    assert result["pairs"]


# ---- Turns and agents ----------------------------------------------------------------------------
def test_turn_cancel_and_turns_cancel_end_queued_turns(op):
    one = send(op, "agent:sleeper", "one")["turns"][0]["turnId"]
    result = operate(op, "turn_cancel", {"turnId": one, "clientCommandId": cid()})
    assert result["accepted"] and result["status"] == "cancelled"
    send(op, "agent:sleeper", "two")
    result = operate(op, "turns_cancel", {"to": ["agent:sleeper"], "clientCommandId": cid()})
    assert result["turns"] and all(t["status"] == "cancelled" for t in result["turns"] if t["accepted"])
    assert not [t for t in operate(op, "roster", {})["activeTurns"] if t["target"] == "agent:sleeper"]


def test_agent_restart_replaces_the_agents_cli(op):
    before = active_binding(op, "agent:kimi")
    result = operate(op, "agent_restart", {"actorId": "agent:kimi", "clientCommandId": cid()})
    assert result["accepted"]

    def new_binding():
        rows = db_rows(
            op, "SELECT binding_id FROM agents_sessionbinding WHERE actor_id = 'agent:kimi' AND status = 'active'"
        )
        return rows and rows[0]["binding_id"] != before

    wait_until(new_binding, timeout=60, message="a new kimi instance")


# ---- context -------------------------------------------------------------------------------------
def test_context_usage_counts_an_operator_dispatch(op):
    before = operate(op, "context_usage", {})
    operate(op, "worker_dispatch", {"to": ["agent:sleeper"], "content": "d" * 1_000, "clientCommandId": cid()})
    after = operate(op, "context_usage", {})
    assert after["uncompactedMessageCount"] == before["uncompactedMessageCount"] + 1
    assert after["estimatedCharacters"] >= before["estimatedCharacters"] + 1_000


def test_context_compact_and_reset_run_as_operator(op):
    compact = operate(op, "context_compact", {"clientCommandId": cid()})
    assert compact["compacted"] is True, compact  # kimi or hermes wrote the summary
    assert "summaryThroughSeq" in operate(op, "context_usage", {})
    reset = operate(op, "context_reset", {"clientCommandId": cid(), "resetNativeSessions": False})
    event = next(e for e in events_of(op, "context.reset") if e["actor"]["actorId"] == "user:assistant")
    assert reset and event["provenance"]["sourceKind"] == "operator"


# ---- memory and identity -------------------------------------------------------------------------
def test_memory_tools_remember_supersede_search_and_retract_as_the_assistant(op):
    remembered = operate(
        op,
        "memory_remember",
        {
            "clientCommandId": cid(),
            "scope": {"type": "room", "id": "room:main"},
            "kind": "fact",
            "content": "the build is green",
        },
    )
    memory_id = remembered["memory"]["memoryId"]
    assert remembered["memory"]["authorActorId"] == "user:assistant"
    newer = operate(
        op, "memory_supersede", {"memoryId": memory_id, "clientCommandId": cid(), "content": "the build is red"}
    )["memory"]["memoryId"]
    found = operate(op, "memory_search", {"query": "build"})
    assert [m["memoryId"] for m in found["items"]][:1] == [newer]
    assert (
        operate(op, "memory_retract", {"memoryId": newer, "clientCommandId": cid()})["memory"]["status"] == "retracted"
    )


def test_memory_remember_refuses_an_agent_scope_and_agent_core_remember_writes_it(op):
    refused = operate(
        op,
        "memory_remember",
        {"clientCommandId": cid(), "scope": {"type": "agent", "id": "agent:kimi"}, "kind": "fact", "content": "x"},
    )
    assert refused["code"] == "INVALID_ENVELOPE"
    core = operate(
        op,
        "agent_core_remember",
        {
            "subjectActorId": "agent:kimi",
            "clientCommandId": cid(),
            "kind": "instruction",
            "content": "keep answers short",
        },
    )
    assert core["memory"]["agentMemoryType"] == "core" and core["memory"]["scope"]["id"] == "agent:kimi"


def test_identity_tools_remember_supersede_search_and_retract(op):
    written = operate(
        op,
        "identity_remember_for",
        {"subjectActorId": "agent:hermes", "clientCommandId": cid(), "kind": "preference", "content": "likes tests"},
    )
    identity_id = written["identity"]["identityId"]
    newer = operate(
        op, "identity_supersede", {"identityId": identity_id, "clientCommandId": cid(), "content": "likes lean tests"}
    )["identity"]["identityId"]
    found = operate(op, "identity_search", {"subjectActorId": "agent:hermes"})
    assert newer in [i["identityId"] for i in found["items"]]
    assert (
        operate(op, "identity_retract", {"identityId": newer, "clientCommandId": cid()})["identity"]["status"]
        == "retracted"
    )


# ---- setup (last: a save makes the assistant ask for a restart) ----------------------------------
def test_setup_read_then_save_requires_a_restart(op):
    draft = operate(op, "setup_read", {})["config"]
    assert {a["id"] for a in draft["agents"]} >= {"kimi", "hermes"}
    draft["assistant"]["extraInstructions"] = "Answer in one line."
    saved = operate(op, "setup_save", {"config": draft})
    assert saved["saved"] and saved["restartRequired"]
    assert op.get("/api/assistant").json()["status"] == "restart_required"

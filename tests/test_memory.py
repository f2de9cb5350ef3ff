"""Memory and identity: REST, the member MCP tools, the admin and the dated rollup.

Everything runs against a real server: REST over HTTP, the agents' tools through the fake CLIs'
real MCP calls (read back from their wire logs), the admin through its HTML forms.
"""

from __future__ import annotations

import json
import re
import sqlite3
import uuid
from contextlib import closing
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from tests.agents import db_rows, fake_agents, mcp_calls, prompts_sent, send, tool_payload, wait_terminal
from tests.pg.databases import room_url_of, write_rows
from tests.server import wait_until


def command_id() -> str:
    return f"m-{uuid.uuid4()}"


def remember(server, **body):
    return server.post("/api/memory", {"clientCommandId": command_id(), **body})


def room_memory(content: str, **extra) -> dict:
    return {"scope": {"type": "room", "id": "room:main"}, "kind": "fact", "content": content, **extra}


def events_of(server, *types: str) -> list[dict]:
    return [e for e in server.events() if e["type"] in types]


def packet_prompts(server, flavor: str) -> list[str]:
    """The Context Packets a fake received (its business prompts, not summaries or rollups)."""
    texts = [block["text"] for msg in prompts_sent(server, flavor) for block in msg["params"]["prompt"]]
    return [t for t in texts if t.startswith("[groupx_protocol]")]


# ---- REST ---------------------------------------------------------------------------------------


def test_the_web_remembers_supersedes_and_retracts_a_room_memory(room):
    created = remember(room, **room_memory("The release is on Friday"))
    assert created.status_code == 201, created.text
    first = created.json()["memory"]
    assert first["memoryId"].startswith("mem_")
    assert first["authorActorId"] == "user:web" and first["sourceKind"] == "web" and first["status"] == "active"
    assert first["agentMemoryType"] is None

    replaced = room.post(
        f"/api/memory/{first['memoryId']}/supersede",
        {"clientCommandId": command_id(), "content": "The release moved to Monday"},
    )
    assert replaced.status_code == 201, replaced.text
    second = replaced.json()["memory"]
    assert second["supersedesMemoryId"] == first["memoryId"] and second["scope"] == first["scope"]

    listed = room.get("/api/memory", params={"query": "release"}).json()["items"]
    assert [m["memoryId"] for m in listed] == [second["memoryId"]]
    history = room.get("/api/memory", params={"query": "release", "includeHistory": "true"}).json()["items"]
    assert [(m["memoryId"], m["status"]) for m in history] == [
        (second["memoryId"], "active"),
        (first["memoryId"], "superseded"),
    ]

    retracted = room.post(f"/api/memory/{second['memoryId']}/retract", {"clientCommandId": command_id()})
    assert retracted.status_code == 200
    assert retracted.json()["memory"]["status"] == "retracted" and retracted.json()["memory"]["retractedAt"]
    assert room.get("/api/memory", params={"query": "release"}).json()["items"] == []

    trail = [
        e
        for e in events_of(room, "memory.remembered", "memory.superseded", "memory.retracted")
        if e["body"]["record"]["memoryId"] in (first["memoryId"], second["memoryId"])
    ]
    assert [e["type"] for e in trail] == ["memory.remembered", "memory.superseded", "memory.retracted"]
    assert all(e["actor"]["actorId"] == "user:web" for e in trail)
    assert all(e["provenance"] == {"sourceKind": "web", "authorActorId": "user:web"} for e in trail)


def test_a_retried_command_replays_its_result_and_a_changed_one_conflicts(room):
    body = {"clientCommandId": command_id(), **room_memory("Retries write once")}
    first = room.post("/api/memory", body)
    again = room.post("/api/memory", body)
    changed = room.post("/api/memory", {**body, "content": "something else"})

    assert first.status_code == again.status_code == 201 and first.json() == again.json()
    assert changed.status_code == 409 and changed.json()["error"]["code"] == "CLIENT_COMMAND_CONFLICT"
    records = [
        e for e in events_of(room, "memory.remembered") if e["body"]["record"]["content"] == "Retries write once"
    ]
    assert len(records) == 1


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"from": "agent:alpha", **room_memory("x")}, 400, "SENDER_FIELD_FORBIDDEN"),
        ({"provenance": {}, **room_memory("x")}, 400, "SENDER_FIELD_FORBIDDEN"),
        ({"agentMemoryType": "dated", **room_memory("x")}, 400, "INVALID_ENVELOPE"),
        (room_memory("x", kind="summary"), 400, "INVALID_ENVELOPE"),
        (room_memory(""), 400, "INVALID_ENVELOPE"),
        ({"scope": {"type": "project", "id": "p"}, "kind": "fact", "content": "x"}, 400, "INVALID_ENVELOPE"),
        ({"scope": {"type": "agent", "id": "alpha"}, "kind": "fact", "content": "x"}, 400, "INVALID_ENVELOPE"),
        (room_memory("x" * 131_073), 413, "MESSAGE_TOO_LARGE"),
        ({"scope": {"type": "agent", "id": "agent:nobody"}, "kind": "fact", "content": "x"}, 404, "UNKNOWN_ACTOR"),
        (room_memory("x", subjectActorId="agent:nobody"), 404, "UNKNOWN_ACTOR"),
        ({"scope": {"type": "room", "id": "room:other"}, "kind": "fact", "content": "x"}, 404, "UNKNOWN_TARGET"),
        (room_memory("x", sourceEventId="evt_missing"), 400, "INVALID_ENVELOPE"),
    ],
)
def test_a_bad_memory_write_is_refused_and_writes_nothing(room, body, status, code):
    before = len(room.events())
    response = remember(room, **body)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code
    assert len(room.events()) == before


def test_unknown_malformed_and_inactive_records_are_refused(room):
    missing = room.post("/api/memory/mem_0000/supersede", {"clientCommandId": command_id(), "content": "x"})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "UNKNOWN_TARGET"
    malformed = room.post("/api/memory/not-an-id/retract", {"clientCommandId": command_id()})
    assert malformed.status_code == 400
    record = remember(room, **room_memory("short-lived")).json()["memory"]
    room.post(f"/api/memory/{record['memoryId']}/retract", {"clientCommandId": command_id()})
    again = room.post(f"/api/memory/{record['memoryId']}/supersede", {"clientCommandId": command_id(), "content": "x"})
    assert again.status_code == 409 and again.json()["error"]["code"] == "STORE_CONFLICT"
    bad_query = room.get("/api/memory", params={"limit": "501"})
    assert bad_query.status_code == 400 and bad_query.json()["error"]["code"] == "INVALID_ENVELOPE"


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("乌龟", ["预发布数据库叫做乌龟，周五冻结。"]),  # two characters: shorter than a trigram
        ("数据库", ["预发布数据库叫做乌龟，周五冻结。", "生产数据库在东京。"]),  # through the trigram index
        ("预发布数据库", ["预发布数据库叫做乌龟，周五冻结。"]),
        ("数据库 东京", ["生产数据库在东京。"]),  # every term must match
        ("周五冻结", ["预发布数据库叫做乌龟，周五冻结。"]),
        ("乌贼", []),
    ],
)
def test_memory_search_finds_chinese_text_by_any_run_of_its_characters(room, query, found):
    scope = {"type": "agent", "id": "agent:gamma"}  # gamma's core memory: no other test writes Chinese there
    for content in ("预发布数据库叫做乌龟，周五冻结。", "生产数据库在东京。"):
        if not room.get("/api/memory", params={"scopeId": "agent:gamma", "query": content}).json()["items"]:
            assert remember(room, scope=scope, kind="fact", content=content).status_code == 201

    answer = room.get("/api/memory", params={"scopeId": "agent:gamma", "query": query})

    assert answer.status_code == 200
    assert sorted(m["content"] for m in answer.json()["items"]) == sorted(found)


def test_agent_scope_from_the_web_is_core_memory_and_the_list_filters_and_pages(room):
    for i in range(3):
        assert (
            remember(
                room, scope={"type": "agent", "id": "agent:alpha"}, kind="preference", content=f"alpha prefers tabs {i}"
            ).status_code
            == 201
        )

    core = room.get("/api/memory", params={"scopeType": "agent", "scopeId": "agent:alpha", "limit": "2"}).json()
    assert [m["content"] for m in core["items"]] == ["alpha prefers tabs 2", "alpha prefers tabs 1"]
    assert all(m["agentMemoryType"] == "core" for m in core["items"]) and core["nextCursor"] == 2
    rest = room.get(
        "/api/memory",
        params={"scopeType": "agent", "scopeId": "agent:alpha", "limit": "2", "cursor": str(core["nextCursor"])},
    ).json()
    assert [m["content"] for m in rest["items"]] == ["alpha prefers tabs 0"] and "nextCursor" not in rest
    typed = room.get("/api/memory", params={"agentMemoryType": "core", "kind": "preference"}).json()["items"]
    assert {m["scope"]["id"] for m in typed} == {"agent:alpha"}


def test_identity_records_are_written_about_an_agent_by_the_web(room):
    created = room.post(
        "/api/identity",
        {
            "clientCommandId": command_id(),
            "subjectActorId": "agent:beta",
            "kind": "instruction",
            "content": "Beta answers in haiku",
        },
    )
    assert created.status_code == 201, created.text
    record = created.json()["identity"]
    assert record["identityId"].startswith("idn_") and record["authorActorId"] == "user:web"
    replaced = room.post(
        f"/api/identity/{record['identityId']}/supersede",
        {"clientCommandId": command_id(), "content": "Beta answers in limericks"},
    ).json()["identity"]
    assert replaced["supersedesIdentityId"] == record["identityId"] and replaced["kind"] == "instruction"
    listed = room.get("/api/identity", params={"subjectActorId": "agent:beta"}).json()["items"]
    assert [r["content"] for r in listed] == ["Beta answers in limericks"]
    retracted = room.post(f"/api/identity/{replaced['identityId']}/retract", {"clientCommandId": command_id()})
    assert retracted.status_code == 200 and retracted.json()["identity"]["status"] == "retracted"
    assert [
        e["type"]
        for e in events_of(room, "identity.remembered", "identity.superseded", "identity.retracted")
        if e["body"]["record"]["subjectActorId"] == "agent:beta"
    ] == ["identity.remembered", "identity.superseded", "identity.retracted"]

    about_a_user = room.post(
        "/api/identity", {"clientCommandId": command_id(), "subjectActorId": "user:web", "kind": "note", "content": "x"}
    )
    assert about_a_user.status_code == 400


# ---- MCP ----------------------------------------------------------------------------------------


def tool(name: str, args: dict) -> str:
    return f"[[fake: mcp tool={name} args='{json.dumps(args)}']]"


@pytest.fixture
def agents_room(make_server, tmp_path):
    return make_server(fake_agents(tmp_path, "kimi", "hermes"))


def test_an_agent_keeps_core_memory_and_its_next_packet_carries_it(agents_room):
    room = agents_room
    note = {"clientCommandId": "core-1", "kind": "preference", "content": "kimi reviews with property tests"}
    wait_terminal(room, send(room, "agent:kimi", tool("core_memory_remember", note))["turns"][0]["turnId"])

    saved = tool_payload(mcp_calls(room, "kimi", "core_memory_remember")[0])["memory"]
    assert saved["scope"] == {"type": "agent", "id": "agent:kimi"} and saved["agentMemoryType"] == "core"
    assert saved["authorActorId"] == saved["subjectActorId"] == "agent:kimi" and saved["sourceKind"] == "mcp"
    event = next(
        e for e in events_of(room, "memory.remembered") if e["body"]["record"]["memoryId"] == saved["memoryId"]
    )
    assert event["actor"]["actorId"] == "agent:kimi" and event["provenance"]["sourceKind"] == "mcp"

    wait_terminal(room, send(room, "agent:kimi", "what do you prefer?")["turns"][0]["turnId"])
    wait_terminal(room, send(room, "agent:hermes", "and you?")["turns"][0]["turnId"])
    kimi_packet, hermes_packet = packet_prompts(room, "kimi")[-1], packet_prompts(room, "hermes")[-1]
    assert "[agent_core_memory]" in kimi_packet and "kimi reviews with property tests" in kimi_packet
    assert kimi_packet.index("[agent_core_memory]") < kimi_packet.index("[current_message]")
    assert kimi_packet.endswith("[current_message]\nwhat do you prefer?")
    assert "[agent_core_memory]" not in hermes_packet  # core memory is its owner's alone


def test_another_agent_cannot_write_someones_core_memory(agents_room):
    room = agents_room
    forged = {
        "clientCommandId": "x-1",
        "scope": {"type": "agent", "id": "agent:hermes"},
        "kind": "note",
        "content": "hermes secretly agrees with kimi",
    }
    smuggled = {
        "clientCommandId": "x-2",
        "kind": "note",
        "content": "x",
        "scope": {"type": "agent", "id": "agent:hermes"},
    }
    wait_terminal(
        room,
        send(room, "agent:kimi", tool("memory_remember", forged) + tool("core_memory_remember", smuggled))["turns"][0][
            "turnId"
        ],
    )

    refused = tool_payload(mcp_calls(room, "kimi", "memory_remember")[0])
    assert refused["code"] == "INVALID_ENVELOPE" and refused["details"]["scopeId"] == "agent:hermes"
    assert tool_payload(mcp_calls(room, "kimi", "core_memory_remember")[0])["code"] == "INVALID_ENVELOPE"
    assert room.get("/api/memory", params={"scopeId": "agent:hermes"}).json()["items"] == []
    # The web may write it (docs/DECISIONS.md D14).
    assert remember(room, scope={"type": "agent", "id": "agent:hermes"}, kind="note", content="ok").status_code == 201


def test_agents_search_memory_and_keep_their_own_identity(agents_room):
    room = agents_room
    remember(room, **room_memory("The staging database is called tortoise"))
    about_kimi = {"clientCommandId": "id-1", "kind": "constraint", "content": "kimi never edits migrations"}
    observed = {"clientCommandId": "obs-1", **room_memory("kimi is careful", subjectActorId="agent:kimi", kind="note")}
    wait_terminal(
        room,
        send(
            room,
            "agent:kimi",
            tool("memory_search", {"query": "tortoise"})
            + tool("identity_remember", about_kimi)
            + tool("identity_read", {}),
        )["turns"][0]["turnId"],
    )
    wait_terminal(room, send(room, "agent:hermes", tool("memory_remember", observed))["turns"][0]["turnId"])

    found = tool_payload(mcp_calls(room, "kimi", "memory_search")[0])["items"]
    assert [m["content"] for m in found] == ["The staging database is called tortoise"]
    mine = tool_payload(mcp_calls(room, "kimi", "identity_remember")[0])["identity"]
    assert mine["subjectActorId"] == mine["authorActorId"] == "agent:kimi"
    read = tool_payload(mcp_calls(room, "kimi", "identity_read")[0])["items"]
    assert [r["identityId"] for r in read] == [mine["identityId"]]
    note = tool_payload(mcp_calls(room, "hermes", "memory_remember")[0])["memory"]
    assert note["authorActorId"] == "agent:hermes" and note["subjectActorId"] == "agent:kimi"

    wait_terminal(room, send(room, "agent:kimi", "who are you?")["turns"][0]["turnId"])
    packet = packet_prompts(room, "kimi")[-1]
    assert "[self_identity]" in packet and "kimi never edits migrations" in packet
    assert "[public_memory]" in packet and "kimi is careful" in packet and "tortoise" in packet


# ---- admin --------------------------------------------------------------------------------------


def _csrf(html: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)


def test_the_admin_retracts_and_supersedes_through_the_same_actions(room):
    username = f"op{uuid.uuid4().hex[:6]}"
    room.env["DJANGO_SUPERUSER_PASSWORD"] = "groupx-test-pass"  # createsuperuser --noinput reads it
    room.manage("createsuperuser", "--noinput", "--username", username, "--email", "op@example.invalid")
    target = remember(room, **room_memory("admin will retract this")).json()["memory"]
    keep = remember(room, **room_memory("admin will rewrite this")).json()["memory"]
    pks = {r["memory_id"]: r["id"] for r in db_rows(room, "SELECT id, memory_id FROM memory_memoryrecord")}

    with httpx.Client(base_url=room.base_url, timeout=10, follow_redirects=True) as browser:
        login = browser.get("/admin/login/")
        browser.post(
            "/admin/login/?next=/admin/",
            data={"csrfmiddlewaretoken": _csrf(login.text), "username": username, "password": "groupx-test-pass"},
        )
        listing = browser.get("/admin/memory/memoryrecord/")
        assert listing.status_code == 200 and target["memoryId"] in listing.text
        browser.post(
            "/admin/memory/memoryrecord/",
            data={
                "csrfmiddlewaretoken": _csrf(listing.text),
                "action": "retract_records",
                "_selected_action": str(pks[target["memoryId"]]),
                "index": "0",
            },
        )
        form = browser.post(
            "/admin/memory/memoryrecord/",
            data={
                "csrfmiddlewaretoken": _csrf(listing.text),
                "action": "supersede_record",
                "_selected_action": str(pks[keep["memoryId"]]),
                "index": "0",
            },
        )
        assert "Supersede" in form.text and "admin will rewrite this" in form.text
        browser.post(
            "/admin/memory/memoryrecord/",
            data={
                "csrfmiddlewaretoken": _csrf(form.text),
                "action": "supersede_record",
                "apply": "Supersede",
                "_selected_action": str(pks[keep["memoryId"]]),
                "content": "admin rewrote this",
            },
        )

    retracted = [
        e for e in events_of(room, "memory.retracted") if e["body"]["record"]["memoryId"] == target["memoryId"]
    ]
    assert len(retracted) == 1 and retracted[0]["actor"]["actorId"] == "user:web"
    superseded = [
        e for e in events_of(room, "memory.superseded") if e["body"]["supersededMemoryId"] == keep["memoryId"]
    ]
    assert len(superseded) == 1 and superseded[0]["body"]["record"]["content"] == "admin rewrote this"


# ---- dated memory ---------------------------------------------------------------------------------


def scenario(tmp_path, flavor: str, default_turn: list[str]) -> None:
    """Rewrite an agent's fake scenario: every new fake process (each rollup is one) reads it."""
    (tmp_path / f"cwd-{flavor}" / ".groupx-fake.json").write_text(json.dumps({"default_turn": default_turn}))


@pytest.fixture
def rollup_room(make_server, tmp_path, monkeypatch):
    # Rollups become due as soon as a batch is full, and are checked every 100 ms.
    monkeypatch.setenv("GROUPX_DATED_MEMORY_QUIET_MS", "0")
    monkeypatch.setenv("GROUPX_DATED_MEMORY_BACKOFF_MS", "300")
    monkeypatch.setenv("GROUPX_MEMORY_TICK_MS", "100")
    return make_server(fake_agents(tmp_path, "kimi", "hermes"))


def full_batch(server, label: str) -> None:
    """One completed Turn of ≥ 16,000 characters: a full dated-memory batch on its own."""
    turn_id = send(server, "agent:kimi", f"[[fake: reply text=ok-{label}]] {label} " + "x" * 16_000)["turns"][0][
        "turnId"
    ]
    assert wait_terminal(server, turn_id)["type"] == "turn.completed"


def dated_records(server, status: str | None = None) -> list[dict]:
    params = {"scopeType": "agent", "scopeId": "agent:kimi", "agentMemoryType": "dated", "includeHistory": "true"}
    items = server.get("/api/memory", params=params).json()["items"]
    return [m for m in items if status is None or m["status"] == status]


def test_a_days_dated_memory_is_written_once_then_replaced_by_the_next_batch(rollup_room, tmp_path):
    room = rollup_room
    scenario(tmp_path, "kimi", ["reply text=DAY-NOTE-ONE"])
    full_batch(room, "first")
    first = wait_until(lambda: dated_records(room), timeout=30, message="the first dated record")[0]
    assert first["content"] == "DAY-NOTE-ONE" and first["sourceKind"] == "automatic_rollup"
    assert first["authorActorId"] == first["subjectActorId"] == "agent:kimi"

    scenario(tmp_path, "kimi", ["reply text=DAY-NOTE-TWO"])
    full_batch(room, "second")
    wait_until(lambda: len(dated_records(room)) == 2, timeout=30, message="the second batch")

    active = dated_records(room, "active")
    assert [m["content"] for m in active] == ["DAY-NOTE-TWO"] and active[0]["supersedesMemoryId"] == first["memoryId"]
    assert [
        e["type"]
        for e in events_of(room, "memory.remembered", "memory.superseded")
        if e["body"]["record"]["agentMemoryType"] == "dated"
    ] == ["memory.remembered", "memory.superseded"]
    rollup_prompts = [
        b["text"]
        for m in prompts_sent(room, "kimi")
        for b in m["params"]["prompt"]
        if b["text"].startswith("[groupx_dated_memory]")
    ]
    assert len(rollup_prompts) == 2 and "DAY-NOTE-ONE" in rollup_prompts[1]  # the previous note is merged
    assert not any("[groupx_dated_memory]" in str(m) for m in prompts_sent(room, "hermes"))  # only the owner
    sources = db_rows(room, "SELECT processed_at, memory_id FROM memory_datedmemorysource ORDER BY response_seq")
    assert [s["memory_id"] for s in sources] == [first["memoryId"], active[0]["memoryId"]]


def test_a_failed_rollup_is_retried_after_its_backoff_and_the_sentinel_writes_nothing(rollup_room, tmp_path):
    room = rollup_room
    scenario(tmp_path, "kimi", ["fail"])
    full_batch(room, "failing")
    failed = wait_until(
        lambda: db_rows(room, "SELECT * FROM memory_datedmemoryrollup WHERE failure_count > 0"),
        timeout=30,
        message="a recorded failure",
    )[0]
    assert failed["last_error_code"] and failed["next_attempt_at"] and dated_records(room) == []

    scenario(tmp_path, "kimi", ["reply text=RECOVERED-NOTE"])
    record = wait_until(lambda: dated_records(room), timeout=30, message="the retried rollup")[0]
    assert record["content"] == "RECOVERED-NOTE"
    assert db_rows(room, "SELECT failure_count FROM memory_datedmemoryrollup")[0]["failure_count"] == 0

    scenario(tmp_path, "kimi", ["reply text=GROUPX_NO_DATED_MEMORY"])
    full_batch(room, "quiet")
    wait_until(
        lambda: not db_rows(room, "SELECT 1 FROM memory_datedmemorysource WHERE processed_at IS NULL"),
        timeout=30,
        message="the sentinel batch to be processed",
    )
    assert [m["content"] for m in dated_records(room)] == ["RECOVERED-NOTE"]


def move_to_the_day_before(server, actor_id: str) -> str:
    """The batches of ``actor_id`` now belong to yesterday: what the server's clock passing midnight
    does to a batch (its date is the day its Turns completed), without waiting for midnight."""
    day = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()  # the server's local clock is UTC
    statements = [
        f"UPDATE {table} SET local_date = ? WHERE actor_id = ?"
        for table in ("memory_datedmemorysource", "memory_datedmemoryrollup")
    ]
    if url := room_url_of(server.config_path):
        for sql in statements:
            write_rows(url, sql, [(day, actor_id)])
        return day
    with closing(sqlite3.connect(server.workdir / ".groupx" / "groupx.db", timeout=30)) as db, db:
        for sql in statements:
            db.execute(sql, (day, actor_id))
    return day


def test_a_small_batch_is_rolled_up_once_its_date_is_over(rollup_room, tmp_path):
    room = rollup_room
    scenario(tmp_path, "kimi", ["reply text=YESTERDAY-NOTE"])
    turn_id = send(room, "agent:kimi", "[[fake: reply text=noted]] the release moved to Friday")["turns"][0]["turnId"]
    assert wait_terminal(room, turn_id)["type"] == "turn.completed"
    [batch] = db_rows(room, "SELECT pending_turns, pending_chars FROM memory_datedmemoryrollup")
    assert batch["pending_turns"] == 1 and batch["pending_chars"] < 16_000  # far from full: not due today

    day = move_to_the_day_before(room, "agent:kimi")

    record = wait_until(lambda: dated_records(room), timeout=30, message="the finished day's dated record")[0]
    assert record["content"] == "YESTERDAY-NOTE" and record["sourceKind"] == "automatic_rollup"
    [rolled] = db_rows(room, "SELECT local_date, pending_turns FROM memory_datedmemoryrollup")
    assert (str(rolled["local_date"]), rolled["pending_turns"]) == (day, 0)
    prompt = next(
        b["text"]
        for m in prompts_sent(room, "kimi")
        for b in m["params"]["prompt"]
        if b["text"].startswith("[groupx_dated_memory]")
    )
    assert f"date: {day}" in prompt and "the release moved to Friday" in prompt

"""Hostile bytes from the browser side: text that cannot be encoded, bodies nested without end,
bodies larger than the protocol allows, and a log that already holds a bad character (D25).

Every request goes over real HTTP to a real daphne server; uploads that must be refused before
they are read are written on a raw socket, so the test controls exactly which bytes were sent.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import uuid

import httpx
import pytest

from tests.agents import active_binding, fake_agents, send, wait_terminal
from tests.server import wait_until

LONE_SURROGATE = "\\ud800"  # JSON text for a lone UTF-16 surrogate: valid JSON, not valid UTF-8
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    """One echoing agent (the fake kimi) and a queued Turn to cancel; read and written by each test."""
    from tests.server import GroupXServer

    workdir = tmp_path_factory.mktemp("hostile")
    server = GroupXServer(
        workdir, {"agents": fake_agents(workdir, "kimi"), "timeouts": {"handshakeMs": 600000, "closeMs": 300}}
    )
    server.start()
    yield server
    server.stop()


def raw_post(server, path: str, body: bytes) -> httpx.Response:
    return httpx.post(server.url(path), content=body, headers={"Content-Type": "application/json"}, timeout=30)


def head_seq(server) -> int:
    return server.get("/api/bootstrap").json()["room"]["throughSeq"]


def a_turn_id(server) -> str:
    turn_id = send(server, "agent:kimi", "hello")["turns"][0]["turnId"]
    wait_terminal(server, turn_id)
    return turn_id


def write_routes(server) -> dict[str, str]:
    """Every JSON write route, each with a body whose ``content``/``clientCommandId`` slot is
    ``{text}`` (a JSON string literal put in by the test)."""
    turn_id = a_turn_id(server)
    return {
        "/api/messages": '{"clientCommandId":"m-%s","to":["agent:kimi"],"content":{text}}',
        "/api/memory": '{"clientCommandId":"r-%s","scope":"room","kind":"fact","content":{text}}',
        "/api/identity": '{"clientCommandId":"i-%s","subjectActorId":"agent:kimi","kind":"profile","content":{text}}',
        "/api/context/compact": '{"clientCommandId":{text}}',
        "/api/context/reset": '{"clientCommandId":{text}}',
        f"/api/turns/{turn_id}/cancel": '{"clientCommandId":{text}}',
        "/api/agents/agent:kimi/restart": '{"clientCommandId":{text}}',
        "/api/setup": '{"agents":{text}}',
        "/api/memory/mem_nope/supersede": '{"clientCommandId":"s-%s","content":{text}}',
    }


def fill(template: str, text: str) -> bytes:
    return template.replace("%s", uuid.uuid4().hex).replace("{text}", text).encode()


def test_a_lone_surrogate_in_any_rest_body_is_invalid_envelope_naming_the_field_and_writes_nothing(room):
    routes = write_routes(room)
    before = head_seq(room)

    for path, template in routes.items():
        response = raw_post(room, path, fill(template, f'"bad {LONE_SURROGATE} text"'))

        assert response.status_code == 400, (path, response.status_code, response.text)
        error = response.json()["error"]
        assert error["code"] == "INVALID_ENVELOPE", path
        field = error["details"]["issues"][0]["path"]
        assert field in ("content", "clientCommandId", "agents"), (path, field)
        assert field in error["message"]
    assert head_seq(room) == before


def test_a_lone_surrogate_in_a_key_or_a_list_is_named_by_its_path(room):
    body = '{"clientCommandId":"k-1","to":["agent:kimi","agent:x' + LONE_SURROGATE + '"],"content":"hi"}'

    error = raw_post(room, "/api/messages", body.encode()).json()["error"]

    assert error["code"] == "INVALID_ENVELOPE"
    assert error["details"]["issues"] == [{"path": "to[1]", "code": "invalid_unicode"}]


def test_a_surrogate_pair_is_one_character_and_is_accepted(room):
    body = f'{{"clientCommandId":"pair-{uuid.uuid4().hex}","to":["agent:kimi"],"content":"smile \\ud83d\\ude00"}}'

    response = raw_post(room, "/api/messages", body.encode())

    assert response.status_code == 202, response.text
    terminal = wait_terminal(room, response.json()["turns"][0]["turnId"])
    assert terminal["type"] == "turn.completed"


def test_a_body_nested_fifty_thousand_levels_is_invalid_envelope_on_every_write_route(room):
    routes = write_routes(room)
    deep = "[" * 50_000 + "]" * 50_000

    for path, template in routes.items():
        response = raw_post(room, path, fill(template, deep))

        assert response.status_code == 400, (path, response.status_code, response.text[:200])
        assert response.json()["error"]["code"] == "INVALID_ENVELOPE", path
        assert "nested deeper" in response.json()["error"]["message"]


def test_a_body_nested_just_past_the_stated_depth_is_refused_and_one_within_it_is_not(room):
    from groupx_site.core.bodies import MAX_JSON_DEPTH

    within = "[" * (MAX_JSON_DEPTH - 1) + "]" * (MAX_JSON_DEPTH - 1)  # the body object is one level
    past = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH

    ok = raw_post(
        room, "/api/messages", fill('{"clientCommandId":"d-%s","to":["agent:kimi"],"content":{text}}', within)
    )
    refused = raw_post(
        room, "/api/messages", fill('{"clientCommandId":"d-%s","to":["agent:kimi"],"content":{text}}', past)
    )

    assert ok.json()["error"]["message"] == "content must be a non-blank string"  # reached the field checks
    assert "nested deeper" in refused.json()["error"]["message"]


def send_raw(server, head: bytes, body_parts=()) -> bytes:
    """Write the request head and the given body parts on one connection, then read the whole
    answer (the server closes the connection after a refusal)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as conn:
        conn.sendall(head)
        try:
            for part in body_parts:
                conn.sendall(part)
        except OSError:  # the server may refuse, and stop reading, before the whole body is sent
            pass
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return answer


def status_and_error(answer: bytes) -> tuple[int, dict]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)["error"]


def test_a_declared_length_over_two_mib_is_refused_before_any_of_the_body_is_sent(room):
    head = (
        b"POST /api/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 209715200\r\n\r\n"
    )  # 200 MB announced, not one byte of it written

    status, error = status_and_error(send_raw(room, head))

    assert status == 413
    assert error["code"] == "MESSAGE_TOO_LARGE"


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def test_a_chunked_body_is_refused_with_its_code_as_soon_as_it_passes_two_mib(room):
    head = (
        b"POST /api/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    parts = [chunk(b'{"content":"' + b"x" * (256 * 1024)) for _ in range(9)]  # 2.25 MiB, never terminated

    status, error = status_and_error(send_raw(room, head, parts))

    assert status == 413
    assert error["code"] == "MESSAGE_TOO_LARGE"
    assert room.readiness() == "ready"


def test_a_small_chunked_body_is_accepted_like_any_other(room):
    body = json.dumps({"clientCommandId": f"ch-{uuid.uuid4()}", "to": ["agent:kimi"], "content": "chunked"}).encode()
    head = (
        b"POST /api/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )

    answer = send_raw(room, head, [chunk(body[:10]), chunk(body[10:]), b"0\r\n\r\n"])

    assert answer.startswith(b"HTTP/1.1 202"), answer[:200]


def test_an_mcp_call_with_a_lone_surrogate_or_deep_nesting_is_refused_with_a_code(room):
    binding = active_binding(room, "agent:kimi")
    before = head_seq(room)

    surrogate = _raw_mcp(room, binding, '{"content":"bad ' + LONE_SURROGATE + '"}')
    very_deep = _raw_mcp(room, binding, '{"content":' + "[" * 50_000 + "]" * 50_000 + "}")
    deep = _raw_mcp(room, binding, '{"content":' + "[" * 40 + "]" * 40 + "}")

    # The MCP SDK's JSON parser refuses lone surrogates and very deep nesting itself ...
    for response in (surrogate, very_deep):
        assert response.status_code == 400
        assert response.json()["error"]["code"] == -32700
    # ... and what it lets through meets the same depth and text checks as a REST body.
    assert deep.status_code == 200
    assert deep.json()["result"]["isError"] is True
    assert json.loads(deep.json()["result"]["content"][0]["text"])["code"] == "INVALID_ENVELOPE"
    assert head_seq(room) == before


def _raw_mcp(server, binding: str, arguments_json: str) -> httpx.Response:
    body = (
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"publish","arguments":' + arguments_json + "}}"
    )
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
        "Content-Type": "application/json",
        "X-GroupX-Binding": binding,
    }
    return httpx.post(server.url("/mcp"), content=body.encode(), headers=headers, timeout=30)


def test_an_mcp_request_over_two_mib_is_refused_before_it_is_read(room):
    head = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n\r\n"
    )

    status, error = status_and_error(send_raw(room, head))

    assert (status, error["code"]) == (413, "MESSAGE_TOO_LARGE")


def test_a_log_that_already_holds_a_lone_surrogate_still_replays_and_every_agent_still_answers(make_server, tmp_path):
    room = make_server(fake_agents(tmp_path, "kimi", "hermes"))
    poisoned = send(room, "agent:kimi", "to be poisoned")
    wait_terminal(room, poisoned["turns"][0]["turnId"])
    # What an older version left behind: the message's stored JSON spells a lone surrogate.
    db = sqlite3.connect(room.workdir / ".groupx" / "groupx.db")
    with db:
        db.execute(
            "UPDATE rooms_event SET body = ? WHERE event_id = ?",
            ['{"content": "poisoned ' + LONE_SURROGATE + ' here"}', poisoned["messageEventId"]],
        )
    db.close()

    after = [send(room, agent, "still there?")["turns"][0]["turnId"] for agent in ("agent:kimi", "agent:hermes")]
    terminals = [wait_terminal(room, turn_id) for turn_id in after]

    assert [t["type"] for t in terminals] == ["turn.completed", "turn.completed"]
    replayed = room.events()
    assert [e["seq"] for e in replayed] == list(range(1, head_seq(room) + 1))
    message = next(e for e in replayed if e["eventId"] == poisoned["messageEventId"])
    assert message["body"]["content"] == "poisoned \ufffd here"
    assert room.get("/api/bootstrap").status_code == 200

    room.restart(timeout=120)  # a restart on a loaded 2-core machine may take more than the default 30 s
    wait_until(lambda: room.events()[-1]["seq"] == head_seq(room), message="a full replay after a restart")
    exported = room.manage("replay_events")
    assert "poisoned \ufffd here" in exported.stdout


@pytest.mark.parametrize("bad_id", ['{"a":1}', "[1]", "true"], ids=["object", "array", "boolean"])
def test_an_mcp_request_whose_id_json_rpc_does_not_allow_is_answered_invalid_request(room, bad_id):
    binding = active_binding(room, "agent:kimi")
    published = [e for e in room.events() if e["type"] == "message.created"]
    body = (
        '{"jsonrpc":"2.0","id":' + bad_id + ',"method":"tools/call","params":{"name":"publish",'
        '"arguments":{"content":"never published"}}}'
    )
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
        "Content-Type": "application/json",
        "X-GroupX-Binding": binding,
    }

    response = httpx.post(room.url("/mcp"), content=body.encode(), headers=headers, timeout=30)

    assert response.status_code == 400, response.text
    answer = response.json()
    assert answer["id"] is None and answer["error"]["code"] == -32600
    assert [e for e in room.events() if e["type"] == "message.created"] == published
    # a well-formed id on the same endpoint is still answered by the SDK
    assert _raw_mcp(room, binding, '{"content":' + "[" * 40 + "]" * 40 + "}").status_code == 200

"""What a hostile page can send to 127.0.0.1 is refused on every surface, with a code (D6, D37).

Three attacks, each on REST (``POST /api/messages``), on the event stream (``/api/events``) and on
``/mcp`` (a ``publish`` with a live binding, while its agent is in a Turn, so the same call without
the attack would write):

- a foreign ``Origin`` (a page on another site calling us with ``fetch`` or ``EventSource``);
- a ``Host`` that is not ours (DNS rebinding: ``attacker.example`` resolving to 127.0.0.1 makes
  the hostile page same-origin with us, and only the Host header tells);
- a ``text/plain`` write (the body type a page may POST cross-site without a CORS preflight).

Each is answered with the protocol's error body (REST and SSE: ``error.code``; ``/mcp``: a
JSON-RPC error with ``data.code``), no stream is opened, and nothing is written.
``tests/test_security.py`` already holds the cross-origin JSON write to REST (403) and a text/plain
one there (415).
"""

from __future__ import annotations

import json
import secrets

import httpx
import pytest

from tests.agents import active_binding, fake_agents
from tests.faults.refusals import hang_turn, publish_call, tool_error_code, what_is_written

NEVER = {"handshakeMs": 600_000, "closeMs": 300, "firstEventMs": 600_000, "idleMs": 600_000}
FOREIGN_ORIGIN = {"Origin": "https://evil.example"}
REBOUND_HOST = {"Host": "attacker.example"}  # resolves to 127.0.0.1 for the page that asked
TEXT_PLAIN = {"Content-Type": "text/plain"}


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    from tests.server import GroupXServer

    workdir = tmp_path_factory.mktemp("origins")
    server = GroupXServer(
        workdir,
        {"server": {"host": "127.0.0.1", "port": 4310}, "timeouts": NEVER, "agents": fake_agents(workdir, "kimi")},
    ).start()
    hang_turn(server, "kimi")
    yield server
    server.stop()


def message_body() -> dict:
    return {"clientCommandId": f"o-{secrets.token_hex(6)}", "to": ["agent:kimi"], "content": "rm -rf ~"}


def rest_write(room, headers: dict) -> httpx.Response:
    return httpx.post(
        room.url("/api/messages"),
        content=json.dumps(message_body()).encode(),
        headers={"Content-Type": "application/json", **headers},
        timeout=10,
    )


def event_stream(room, headers: dict) -> tuple[int, str, bytes]:
    method = "POST" if headers.get("Content-Type") == "text/plain" else "GET"
    content = b'{"afterSeq": 0}' if method == "POST" else None
    with httpx.stream(
        method, room.url("/api/events?afterSeq=0"), headers=headers, content=content, timeout=10
    ) as response:
        opened = response.headers.get("content-type", "").startswith("text/event-stream")
        return (
            response.status_code,
            "stream" if opened else response.headers.get("content-type", ""),
            (b"" if opened else response.read()),
        )


@pytest.mark.parametrize(
    ("attack", "headers", "status"),
    [
        ("a rebound Host", REBOUND_HOST, 400),
        ("a text/plain write", TEXT_PLAIN, 415),
    ],
)
def test_rest_refuses_with_the_protocols_error_body_and_writes_nothing(room, attack, headers, status):
    before = what_is_written(room)

    response = rest_write(room, headers)

    assert response.status_code == status
    assert response.json()["error"]["code"] == "INVALID_ENVELOPE", response.text
    assert what_is_written(room) == before


@pytest.mark.parametrize(
    ("attack", "headers", "status"),
    [
        ("a foreign Origin", FOREIGN_ORIGIN, 403),
        ("a rebound Host", REBOUND_HOST, 400),
        ("a text/plain write", TEXT_PLAIN, 415),
    ],
)
def test_the_event_stream_refuses_with_the_protocols_error_body_and_opens_no_stream(room, attack, headers, status):
    before = what_is_written(room)

    code, kind, body = event_stream(room, headers)

    assert (code, kind) == (status, "application/json"), body[:300]
    assert json.loads(body)["error"]["code"] == "INVALID_ENVELOPE"
    assert what_is_written(room) == before


@pytest.mark.parametrize(
    ("attack", "headers", "status"),
    [
        ("a foreign Origin", FOREIGN_ORIGIN, 403),
        ("a rebound Host", REBOUND_HOST, 421),
        ("a text/plain write", TEXT_PLAIN, 415),
    ],
)
def test_mcp_refuses_a_live_binding_with_a_json_rpc_error_and_writes_nothing(room, attack, headers, status):
    binding = active_binding(room, "agent:kimi")
    arguments = {"content": "said from a hostile page", "clientCommandId": f"m-{secrets.token_hex(6)}"}
    before = what_is_written(room)

    response = publish_call(room, binding, arguments, headers=headers)

    assert response.status_code == status
    assert response.headers["content-type"].startswith("application/json"), response.text[:300]
    assert tool_error_code(response) == "INVALID_ENVELOPE"
    assert response.json()["error"]["code"] == -32600  # JSON-RPC's "invalid request"
    assert what_is_written(room) == before
    assert tool_error_code(publish_call(room, binding, arguments)) is None  # without the attack it is written
    assert what_is_written(room) != before

"""What a hostile page in the user's browser could send (ARCHITECTURE "Security")."""

from __future__ import annotations

import httpx


def test_a_cross_origin_text_plain_post_creates_nothing(room):
    before = len(room.events())

    response = httpx.post(
        room.url("/api/messages"),
        content=b'{"clientCommandId":"evil","to":["agent:alpha"],"content":"rm -rf"}',
        headers={"Content-Type": "text/plain", "Origin": "https://evil.example"},
    )

    assert response.status_code == 415
    assert len(room.events()) == before


def test_a_cross_origin_json_post_is_refused(room):
    before = len(room.events())

    response = httpx.post(
        room.url("/api/messages"),
        json={"clientCommandId": "evil2", "to": ["agent:alpha"], "content": "x"},
        headers={"Origin": "https://evil.example"},
    )

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "INVALID_ENVELOPE"
    assert len(room.events()) == before


def test_a_same_origin_json_post_is_accepted(room):
    response = httpx.post(
        room.url("/api/messages"),
        json={"clientCommandId": "same-origin", "to": ["agent:alpha"], "content": "x"},
        headers={"Origin": room.base_url},
    )

    assert response.status_code == 202


def test_a_foreign_host_header_is_refused(room):
    response = httpx.get(room.url("/api/health"), headers={"Host": "attacker.example"})

    assert response.status_code == 400


def test_responses_carry_the_security_headers(room):
    response = room.get("/api/health")

    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert "default-src 'self'" in response.headers["Content-Security-Policy"]
    assert "access-control-allow-origin" not in response.headers


def test_mcp_paths_are_reserved_and_unavailable(room):
    response = httpx.post(room.url("/mcp"), json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})

    assert response.status_code == 503
    assert response.json()["error"]["data"]["code"] == "MCP_UNAVAILABLE"

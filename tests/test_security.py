"""What a hostile page in the user's browser could send (docs/DECISIONS.md D6, D25)."""

from __future__ import annotations

import httpx
import pytest


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


def test_a_foreign_host_header_is_refused_on_a_write_and_on_a_page_too(room):
    write = httpx.post(
        room.url("/api/messages"),
        json={"clientCommandId": "h", "to": ["agent:alpha"], "content": "x"},
        headers={"Host": "attacker.example"},
    )
    page = httpx.get(room.url("/"), headers={"Host": "attacker.example"})

    assert write.status_code == 400
    assert page.status_code == 400


def test_the_admin_still_refuses_a_login_post_without_its_csrf_token(room):
    # Django's page middleware is skipped only under /api/ (docs/DECISIONS.md D20).
    response = httpx.post(room.url("/admin/login/"), data={"username": "x", "password": "y"})

    assert response.status_code == 403


def test_api_answers_skip_the_page_middleware(room):
    response = room.get("/api/bootstrap")

    assert "set-cookie" not in response.headers
    assert "x-frame-options" not in response.headers  # the CSP's frame-ancestors covers the API


def test_responses_carry_the_security_headers(room):
    response = room.get("/api/health")

    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert "default-src 'self'" in response.headers["Content-Security-Policy"]
    assert "access-control-allow-origin" not in response.headers


def test_the_room_keeps_no_referrer_and_the_admin_pages_send_their_own_origin(room):
    # no-referrer made Chromium post the admin's login form with "Origin: null" (a CSRF 403).
    assert httpx.get(room.url("/")).headers["Referrer-Policy"] == "no-referrer"
    assert httpx.get(room.url("/admin/login/")).headers["Referrer-Policy"] == "same-origin"


@pytest.mark.parametrize("binding", [None, "binding:operator"])
def test_the_operator_mcp_path_refuses_anything_but_the_assistants_session_token(room, binding):
    headers = {"X-GroupX-Binding": binding} if binding else {}
    response = room.post("/mcp/operator", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)

    assert response.status_code == 400
    assert response.json()["error"]["data"]["code"] == "MCP_BINDING_MISMATCH"


def test_the_member_mcp_path_refuses_a_request_without_a_binding(room):
    response = room.post("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})

    assert response.status_code == 400
    assert response.json()["error"]["data"]["code"] == "MCP_BINDING_MISMATCH"


def test_the_member_mcp_path_refuses_a_foreign_host_even_with_a_real_binding(room):
    from tests.agents import active_binding

    binding = active_binding(room, "agent:alpha")
    response = room.post(
        "/mcp",
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Host": "evil.example", "X-GroupX-Binding": binding, "Accept": "application/json, text/event-stream"},
    )
    good = room.post(
        "/mcp",
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"X-GroupX-Binding": binding, "Accept": "application/json, text/event-stream"},
    )

    assert response.status_code == 421
    assert good.status_code == 200
    assert [t["name"] for t in good.json()["result"]["tools"]][:5] == ["send", "publish", "ask", "collect", "read"]

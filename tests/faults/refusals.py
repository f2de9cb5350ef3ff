"""What a refused request must leave behind, and raw requests that carry what an attacker sends
(the fault tier's binding and origin cases)."""

from __future__ import annotations

import httpx

from tests.agents import db_rows, send, turn_events
from tests.server import GroupXServer, wait_until

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


def what_is_written(server: GroupXServer) -> tuple[int, int]:
    """The log's head and the count of command receipts: a refused request changes neither."""
    head = server.get("/api/bootstrap").json()["room"]["throughSeq"]
    receipts = db_rows(server, "SELECT COUNT(*) AS n FROM rooms_clientcommand")[0]["n"]
    return head, receipts


def publish_call(
    server: GroupXServer,
    binding: str | None,
    arguments: dict,
    *,
    headers: dict | None = None,
    content: bytes | None = None,
) -> httpx.Response:
    """A streamable-HTTP ``tools/call publish`` (the write every member tool has) with any headers."""
    headers = {**MCP_HEADERS, **(headers or {})}
    if binding is not None:
        headers["X-GroupX-Binding"] = binding
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "publish", "arguments": arguments}}
    if content is not None:
        return httpx.post(server.url("/mcp"), content=content, headers=headers, timeout=30)
    return httpx.post(server.url("/mcp"), json=request, headers=headers, timeout=30)


def tool_error_code(response: httpx.Response) -> str | None:
    """The protocol code of a refused call: HTTP-level (``error.data.code``) or a tool error."""
    import json

    body = response.json()
    if "error" in body:
        return body["error"]["data"]["code"]
    result = body["result"]
    return json.loads(result["content"][0]["text"])["code"] if result.get("isError") else None


def hang_turn(server: GroupXServer, agent: str) -> str:
    """A Turn of ``agent`` that runs until cancelled: its binding may act while it runs."""
    turn_id = send(server, f"agent:{agent}", "[[fake: hang]]")["turns"][0]["turnId"]
    wait_until(
        lambda: any(e["type"] == "turn.started" for e in turn_events(server, turn_id)),
        timeout=60,
        message=f"{agent}'s Turn to start",
    )
    return turn_id

"""Helpers for end-to-end tests that run agents: rooms of fake CLIs and turn-level assertions."""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import uuid
from pathlib import Path

import httpx

from agents.fakes import wirelog
from tests.pg.databases import read_rows, room_url_of, write_rows
from tests.server import FAKES_BIN, GroupXServer, wait_until


def fake_agents(workdir: Path, *drivers: str, scenarios: dict[str, dict] | None = None) -> dict:
    """Agents named after their drivers, each with its own cwd (and optional fake scenario)."""
    agents = {}
    for driver in drivers:
        cwd = workdir / f"cwd-{driver}"
        cwd.mkdir(parents=True, exist_ok=True)
        if scenarios and driver in scenarios:
            (cwd / ".groupx-fake.json").write_text(json.dumps(scenarios[driver]))
        agents[driver] = {"command": str(FAKES_BIN / driver), "cwd": str(cwd)}
    return agents


def send(server: GroupXServer, to: list[str] | str, content: str, **extra) -> dict:
    to = [to] if isinstance(to, str) else to
    body = {"clientCommandId": f"t-{uuid.uuid4()}", "to": to, "content": content, **extra}
    response = server.post("/api/messages", body)
    assert response.status_code == 202, response.text
    return response.json()


def cancel(server: GroupXServer, turn_id: str) -> dict:
    response = server.post(f"/api/turns/{turn_id}/cancel", {"clientCommandId": f"c-{uuid.uuid4()}"})
    assert response.status_code == 202, response.text
    return response.json()


def turn_events(server: GroupXServer, turn_id: str) -> list[dict]:
    return [e for e in server.events() if e["body"].get("turnId") == turn_id]


def wait_terminal(server: GroupXServer, turn_id: str, *, timeout: float = 30.0) -> dict:
    def terminal():
        found = [
            e
            for e in turn_events(server, turn_id)
            if e["type"] in ("turn.completed", "turn.failed", "turn.cancelled", "turn.interrupted")
        ]
        return found[0] if found else None

    return wait_until(terminal, timeout=timeout, interval=0.1, message=f"a terminal event for {turn_id}")


def response_of(server: GroupXServer, terminal: dict) -> dict:
    return next(e for e in server.events() if e["eventId"] == terminal["body"]["responseEventId"])


def db_write(server: GroupXServer, sql: str, *params) -> None:
    """Craft a historical row in a stopped room's store (a state an older GroupX left behind)."""
    if url := room_url_of(server.config_path):
        write_rows(url, sql, [params])
        return
    db = sqlite3.connect(server.workdir / ".groupx" / "groupx.db")
    try:
        with db:
            db.execute(sql, params)
    finally:
        db.close()


def db_rows(server: GroupXServer, sql: str, *params) -> list[dict]:
    """Read-only look at the server's SQLite file (or PostgreSQL database, make test-pg), for
    assertions on rows the API does not expose."""
    if url := room_url_of(server.config_path):
        return read_rows(url, sql, params)
    db = sqlite3.connect(f"file:{server.workdir / '.groupx' / 'groupx.db'}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in db.execute(sql, params)]
    finally:
        db.close()


def wire(server: GroupXServer, flavor: str | None = None, **filters) -> list[dict]:
    return wirelog.read_records(server.fake_log_dir, flavor=flavor, **filters)


def prompts_sent(server: GroupXServer, flavor: str, method: str = "session/prompt") -> list[dict]:
    return [r["msg"] for r in wire(server, flavor, kind="in") if r["msg"].get("method") == method]


def mcp_calls(server: GroupXServer, flavor: str, tool: str | None = None) -> list[dict]:
    """The fake CLI's MCP tools/call exchanges: [{"args", "result"|"status"/"body"}] in order."""
    calls = []
    for record in wire(server, flavor, kind="mcp"):
        request = record.get("req") or {}
        if request.get("method") != "tools/call":
            continue
        if tool and request["params"]["name"] != tool:
            continue
        response = record.get("resp") or {}
        calls.append(
            {
                "tool": request["params"]["name"],
                "args": request["params"].get("arguments"),
                "status": record.get("status"),
                "result": response.get("result"),
                "error": response.get("error"),
            }
        )
    return calls


def tool_payload(call: dict) -> dict:
    """The JSON a tool returned (success or isError), parsed from its text content."""
    return json.loads(call["result"]["content"][0]["text"])


def active_binding(server: GroupXServer, actor_id: str) -> str:
    rows = db_rows(
        server,
        "SELECT binding_id FROM agents_sessionbinding WHERE actor_id = ? AND status = 'active'"
        " ORDER BY created_at DESC",
        actor_id,
    )
    return rows[0]["binding_id"]


def call_tool(server: GroupXServer, binding: str | None, tool: str, arguments: dict):
    """A raw streamable-HTTP tools/call (stateless servers need no initialize first)."""
    import httpx

    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    if binding is not None:
        headers["X-GroupX-Binding"] = binding
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    return httpx.post(server.url("/mcp"), json=body, headers=headers, timeout=70)


def csrf(html: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)


@contextlib.contextmanager
def admin_session(server: GroupXServer):
    """An HTTP client logged in to the Django admin as a new superuser."""
    server.env["DJANGO_SUPERUSER_PASSWORD"] = "groupx-test-pass"  # createsuperuser --noinput reads it
    server.manage("createsuperuser", "--noinput", "--username", "op", "--email", "op@example.invalid")
    with httpx.Client(base_url=server.base_url, timeout=10, follow_redirects=True) as browser:
        login = browser.get("/admin/login/")
        browser.post(
            "/admin/login/?next=/admin/",
            data={"csrfmiddlewaretoken": csrf(login.text), "username": "op", "password": "groupx-test-pass"},
        )
        yield browser

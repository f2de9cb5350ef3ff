"""Built-in MCP client of the fake CLIs (NATIVE_PROTOCOLS §6.5).

The ``mcp`` directive makes a *real* call to the GroupX ``/mcp`` endpoint the broker handed to
the native session, so tests prove attribution through the binding header end to end. HTTP
uses ``http.client`` directly (never ``urllib``) so proxy variables in the environment are
ignored, as a loopback call must be. A stdio transport is included for stdio descriptors.

Protocol-neutral: each fake turns its own descriptor shape into an ``McpDescriptor``.
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

BINDING_HEADER = "X-GroupX-Binding"
MCP_PROTOCOL_VERSION = "2025-06-18"
_BINDING_FLAGS = ("--binding", "--binding-id")


@dataclass
class McpDescriptor:
    """Where the groupx MCP server is: ``http`` (url + headers) or ``stdio`` (command + args)."""

    transport: str
    url: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)
    command: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_entry(cls, entry: dict[str, Any]) -> McpDescriptor | None:
        """ACP ``mcpServers[]`` item, Codex ``{url, http_headers}`` or Claude ``mcpServers.groupx``.
        Headers may be a ``[{name, value}]`` list (ACP) or a mapping (Codex, Claude)."""
        if not isinstance(entry, dict):
            return None
        if entry.get("url"):
            raw = entry.get("headers", entry.get("http_headers")) or []
            if isinstance(raw, dict):
                headers = [(str(k), str(v)) for k, v in raw.items()]
            else:
                headers = [(str(h.get("name")), str(h.get("value"))) for h in raw if isinstance(h, dict)]
            return cls("http", url=str(entry["url"]), headers=headers)
        if entry.get("command"):
            env_raw = entry.get("env") or []
            if isinstance(env_raw, dict):
                env = {str(k): str(v) for k, v in env_raw.items()}
            else:
                env = {str(e.get("name")): str(e.get("value")) for e in env_raw if isinstance(e, dict)}
            return cls("stdio", command=str(entry["command"]), args=[str(a) for a in entry.get("args") or []], env=env)
        return None

    def binding(self) -> str | None:
        if self.transport == "http":
            return next((v for k, v in self.headers if k.lower() == BINDING_HEADER.lower()), None)
        for i, arg in enumerate(self.args):
            for flag in _BINDING_FLAGS:
                if arg == flag and i + 1 < len(self.args):
                    return self.args[i + 1]
                if arg.startswith(flag + "="):
                    return arg.split("=", 1)[1]
        return None

    def tampered(self, override: str | None, drop: bool) -> McpDescriptor:
        """Scenario ``mcp_binding_override`` / ``mcp_drop_binding`` for negative tests."""
        if override is None and not drop:
            return self
        if self.transport == "http":
            headers = [(k, v) for k, v in self.headers if k.lower() != BINDING_HEADER.lower()]
            if not drop:
                headers.append((BINDING_HEADER, override or ""))
            return McpDescriptor("http", url=self.url, headers=headers)
        args: list[str] = []
        skip = False
        for arg in self.args:
            if skip:
                skip = False
                continue
            if arg in _BINDING_FLAGS:
                skip = True
                if not drop:
                    args += [arg, override or ""]
                continue
            if any(arg.startswith(f + "=") for f in _BINDING_FLAGS):
                if not drop:
                    args.append(arg.split("=", 1)[0] + "=" + (override or ""))
                continue
            args.append(arg)
        return McpDescriptor("stdio", command=self.command, args=args, env=self.env)


@dataclass
class McpOutcome:
    ok: bool
    code: str | None = None  # error code when not ok (MCP_BINDING_MISMATCH, no_mcp_config, …)
    result: dict[str, Any] | None = None  # tools/call result when the call got that far
    tools: list[str] | None = None  # names from tools/list, when listed

    def ref(self) -> str:
        """``structuredContent.messageEventId``, or the first 40 chars of the first text item."""
        res = self.result or {}
        structured = res.get("structuredContent")
        if isinstance(structured, dict) and structured.get("messageEventId"):
            return str(structured["messageEventId"])
        for item in res.get("content") or []:
            if isinstance(item, dict) and item.get("type") == "text":
                return str(item.get("text", ""))[:40]
        return ""

    def result_text(self) -> str:
        res = self.result or {}
        texts = [str(i.get("text", "")) for i in res.get("content") or [] if isinstance(i, dict)]
        return "\n".join(texts) if texts else json.dumps(res)

    def summary(self, tool: str) -> str:
        return f"mcp:{tool}:ok:{self.ref()}" if self.ok else f"mcp:{tool}:error:{self.code}"


def _error_code(status: int | None, msg: Any) -> str | None:
    """A JSON-RPC error maps to ``error.data.code`` when present (GroupX puts its code there,
    e.g. a 400 ``MCP_BINDING_MISMATCH``), else to the numeric code; other non-2xx to http_<n>."""
    if isinstance(msg, dict) and isinstance(msg.get("error"), dict):
        err = msg["error"]
        data = err.get("data")
        if isinstance(data, dict) and data.get("code"):
            return str(data["code"])
        return str(err.get("code", "rpc_error"))
    if status is not None and not 200 <= status < 300:
        return f"http_{status}"
    return None


def _tool_error_code(result: dict[str, Any]) -> str:
    """GroupX tool errors carry ``{"code": …, "message": …}`` as their text."""
    for item in result.get("content") or []:
        if isinstance(item, dict) and item.get("type") == "text":
            try:
                parsed = json.loads(item.get("text", ""))
            except ValueError:
                continue
            if isinstance(parsed, dict) and parsed.get("code"):
                return str(parsed["code"])
    return "tool_error"


class McpClient:
    """One client per fake process; each call runs the full MCP handshake (the GroupX endpoint
    is stateless, and this keeps the client free of connection state)."""

    def __init__(self, flavor: str, log: Any, scenario: dict[str, Any]):
        self.flavor = flavor
        self.log = log
        self.timeout = float(scenario.get("mcp_timeout_ms", 30000)) / 1000.0
        override = scenario.get("mcp_binding_override")
        self.override = None if override is None else str(override)
        self.drop = bool(scenario.get("mcp_drop_binding"))
        self._ids = 0

    # ------------------------------------------------------------------------------- public

    def call(self, desc: McpDescriptor | None, tool: str, arguments: Any, list_tools: bool = False) -> McpOutcome:
        return self._run(desc, [("tools/call", {"name": tool, "arguments": arguments})], list_tools)

    def probe(self, desc: McpDescriptor | None) -> McpOutcome:
        """What a real CLI does when the session is set up: handshake plus tools/list."""
        return self._run(desc, [], True)

    # ------------------------------------------------------------------------------ session

    def _run(self, desc: McpDescriptor | None, calls: list[tuple[str, dict[str, Any]]], list_tools: bool) -> McpOutcome:
        if desc is None:
            return McpOutcome(False, "no_mcp_config")
        if desc.binding() is None and self.override is None and not self.drop:
            return McpOutcome(False, "no_binding")
        desc = desc.tampered(self.override, self.drop)
        conn: _HttpConn | _StdioConn
        try:
            conn = _HttpConn(self, desc) if desc.transport == "http" else _StdioConn(self, desc)
        except OSError as exc:
            self.log.record("mcp", transport=desc.transport, error=f"spawn failed: {exc}")
            return McpOutcome(False, "connect_error")
        try:
            return self._session(conn, calls, list_tools)
        finally:
            conn.close()

    def _session(self, conn: Any, calls: list[tuple[str, dict[str, Any]]], list_tools: bool) -> McpOutcome:
        init = {
            "protocolVersion": MCP_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": f"groupx-fake-{self.flavor}", "version": "0.0.0"},
        }
        status, msg, err = conn.request("initialize", init, self._next_id())
        code = err or _error_code(status, msg)
        if code or not isinstance(msg, dict) or "result" not in msg:
            return McpOutcome(False, code or "bad_initialize")
        conn.negotiated = str((msg["result"] or {}).get("protocolVersion") or MCP_PROTOCOL_VERSION)
        status, msg, err = conn.request("notifications/initialized", None, None)
        if err or (status is not None and status not in (200, 202)):
            return McpOutcome(False, err or _error_code(status, msg))
        tools = None
        if list_tools:
            status, msg, err = conn.request("tools/list", {}, self._next_id())
            code = err or _error_code(status, msg)
            if code:
                return McpOutcome(False, code)
            result = msg.get("result") if isinstance(msg, dict) else None
            tools = [t.get("name") for t in (result or {}).get("tools") or [] if isinstance(t, dict)]
        outcome = McpOutcome(True, tools=tools)
        for method, params in calls:
            status, msg, err = conn.request(method, params, self._next_id())
            code = err or _error_code(status, msg)
            result = msg.get("result") if isinstance(msg, dict) else None
            if code or not isinstance(result, dict):
                return McpOutcome(False, code or "bad_response", tools=tools)
            if result.get("isError"):
                return McpOutcome(False, _tool_error_code(result), result=result, tools=tools)
            outcome = McpOutcome(True, result=result, tools=tools)
        return outcome

    def _next_id(self) -> int:
        self._ids += 1
        return self._ids


def _message(method: str, params: Any, req_id: int | None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    if req_id is not None:
        msg["id"] = req_id
    return msg


class _HttpConn:
    """Streamable HTTP: POST per message; JSON or SSE replies; optional Mcp-Session-Id."""

    def __init__(self, client: McpClient, desc: McpDescriptor):
        self.client = client
        self.desc = desc
        parts = urlsplit(desc.url)
        self.https = parts.scheme == "https"
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or (443 if self.https else 80)
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.session_id: str | None = None
        self.negotiated: str | None = None

    def _connect(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        return cls(self.host, self.port, timeout=self.client.timeout)

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        headers.update(dict(self.desc.headers))
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.negotiated:
            headers["MCP-Protocol-Version"] = self.negotiated
        return headers

    def request(self, method: str, params: Any, req_id: int | None) -> tuple[int | None, Any, str | None]:
        payload = _message(method, params, req_id)
        headers = self._headers()
        rec: dict[str, Any] = {"transport": "http", "url": self.desc.url, "headers": headers, "req": payload}
        conn = self._connect()
        try:
            conn.request("POST", self.path, body=json.dumps(payload).encode("utf-8"), headers=headers)
            resp = conn.getresponse()
            status = resp.status
            self.session_id = resp.getheader("Mcp-Session-Id") or self.session_id
            ctype = (resp.getheader("Content-Type") or "").lower()
            msg, body = None, ""
            if "text/event-stream" in ctype:
                msg = _read_sse(resp, req_id)
            else:
                body = resp.read().decode("utf-8", "replace")
                if body.strip():
                    try:
                        msg = json.loads(body)
                    except ValueError:
                        msg = None
            rec.update(status=status, resp=msg)
            if msg is None and body:
                rec["body"] = body[:4000]
            if not 200 <= status < 300:
                rec["http_status"] = status
                rec["body"] = body[:4000]
            self.client.log.record("mcp", **rec)
            return status, msg, None
        except TimeoutError as exc:
            self.client.log.record("mcp", **rec, error=f"timeout: {exc}")
            return None, None, "timeout"
        except (OSError, http.client.HTTPException) as exc:
            self.client.log.record("mcp", **rec, error=repr(exc))
            return None, None, "connect_error"
        finally:
            conn.close()

    def close(self) -> None:
        if not self.session_id:
            return
        conn = self._connect()
        try:
            conn.request("DELETE", self.path, headers=self._headers())
            status = conn.getresponse().status
            self.client.log.record("mcp", transport="http", req={"method": "DELETE"}, status=status)
        except (OSError, http.client.HTTPException) as exc:
            self.client.log.record("mcp", transport="http", req={"method": "DELETE"}, error=repr(exc))
        finally:
            conn.close()


def _read_sse(resp: http.client.HTTPResponse, req_id: int | None) -> Any:
    """Read SSE events until a ``data:`` payload is the response with ``req_id``; the stream may
    stay open after it, so stop there instead of reading to EOF."""
    data: list[str] = []
    last = None
    while True:
        raw = resp.readline()
        line = raw.decode("utf-8", "replace").rstrip("\r\n") if raw else ""
        if raw and line.startswith("data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(" ") else value)  # SSE drops one leading space
            continue
        if (not raw or not line) and data:
            try:
                msg = json.loads("\n".join(data))
            except ValueError:
                msg = None
            data = []
            if isinstance(msg, dict):
                last = msg
                if msg.get("id") == req_id and ("result" in msg or "error" in msg):
                    return msg
        if not raw:
            return last


class _StdioConn:
    """Newline JSON-RPC over a child's stdio, for stdio descriptors (unit tests only)."""

    def __init__(self, client: McpClient, desc: McpDescriptor):
        self.client = client
        self.desc = desc
        self.negotiated: str | None = None
        self.proc = subprocess.Popen(
            [desc.command, *desc.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **desc.env},
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True, name=f"mcp-stdio-{uuid.uuid4().hex[:4]}").start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.put(raw)
        self.lines.put(b"")

    def request(self, method: str, params: Any, req_id: int | None) -> tuple[int | None, Any, str | None]:
        payload = _message(method, params, req_id)
        rec: dict[str, Any] = {
            "transport": "stdio",
            "command": self.desc.command,
            "args": self.desc.args,
            "req": payload,
        }
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(payload).encode("utf-8") + b"\n")
            self.proc.stdin.flush()
        except OSError as exc:
            self.client.log.record("mcp", **rec, error=repr(exc))
            return None, None, "connect_error"
        if req_id is None:
            self.client.log.record("mcp", **rec, status=None, resp=None)
            return None, None, None
        deadline = time.monotonic() + self.client.timeout
        while True:
            try:
                raw = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.client.log.record("mcp", **rec, error="timeout")
                return None, None, "timeout"
            if not raw:
                self.client.log.record("mcp", **rec, error="eof")
                return None, None, "connect_error"
            try:
                msg = json.loads(raw)
            except ValueError:
                continue
            if isinstance(msg, dict) and msg.get("id") == req_id and "method" not in msg:
                self.client.log.record("mcp", **rec, status=None, resp=msg)
                return None, msg, None

    def close(self) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()

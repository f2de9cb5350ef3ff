"""The member MCP endpoint ``/mcp`` (FEATURES §11, PROTOCOL §12).

A low-level SDK ``Server`` named ``groupx`` behind a stateless, JSON-response session manager with
the SDK's DNS-rebinding guard on (loopback hosts and origins only). Before that, and before the
binding, the REST rule refuses a foreign Host, a foreign Origin and a non-JSON write with the
protocol's code (``transport_refusal``, docs/DECISIONS.md D37). The caller is the
``X-GroupX-Binding`` header, matched here before the SDK sees the request: a missing, unknown or
closed binding is HTTP 400 with ``data.code = MCP_BINDING_MISMATCH``; a binding whose session has
no verified MCP support is 503 ``MCP_UNAVAILABLE``. The binding is matched in constant time (D39).
The tools, their schemas and their handlers are
declared together in ``agents/mcp/tools.py``; this module lists and calls what is declared there.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from agents import instances
from agents.mcp.tools import INSTRUCTIONS, TOOLS
from groupx_site.core.bodies import check_json_value
from groupx_site.core.errors import ErrorCode, GroupXError
from groupx_site.core.http import (
    WRITE_METHODS,
    foreign_host,
    is_own_host,
    refused_content_type,
    refused_origin,
    replayed,
)
from groupx_site.store import db, store_faults

logger = logging.getLogger("groupx.mcp")
BINDING_HEADER = b"x-groupx-binding"
SECURITY = TransportSecuritySettings(
    enable_dns_rebinding_protection=True,
    allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost"],
    allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
)


def _text_result(body: dict[str, Any], *, error: bool) -> types.CallToolResult:
    text = json.dumps(body, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=None if error else body,
        is_error=error,
    )


def tool_server(name: str, instructions: str, tools: dict) -> Server:
    """A low-level SDK server that lists and calls the tools declared in ``tools`` (the member
    surface here; the operator surface in ``assistant/mcp/server.py``)."""

    async def call(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await call_tool(tools, ctx, params)

    return Server(name, version="0.1.0", instructions=instructions, on_list_tools=tool_lister(tools), on_call_tool=call)


def tool_lister(tools: dict):
    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=tool.name, description=tool.description, input_schema=tool.input_schema)
                for tool in tools.values()
            ]
        )

    return list_tools


async def call_tool(tools: dict, ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    binding_id = ctx.request.scope.get("groupx.binding") if ctx.request is not None else None
    tool = tools.get(params.name)
    try:
        if tool is None:
            raise GroupXError("INVALID_ENVELOPE", f"no tool named {params.name!r}")
        arguments = dict(params.arguments or {})
        check_json_value(arguments)  # depth and text, as for a REST body (groupx_site/core/bodies.py)
        result = await tool.handler(binding_id, arguments)
        return _text_result(result, error=False)
    except GroupXError as error:
        return _text_result({k: v for k, v in error.as_body()["error"].items()}, error=True)
    except Exception as error:  # the caller gets a protocol error, never a stack trace
        fault = store_faults.as_store_unavailable(error)
        if fault is not None:
            return _text_result(fault.as_body()["error"], error=True)
        logger.exception("tool %s failed", params.name)
        return _text_result({"code": "INTERNAL_ERROR", "message": "internal error"}, error=True)


class Endpoint:
    """One SDK server behind its stateless, JSON-response session manager. ``run()`` of a session
    manager can be entered once: it is kept open in one long-lived task."""

    def __init__(self, server: Server, task_name: str):
        self.server = server
        self.task_name = task_name
        self.manager: StreamableHTTPSessionManager | None = None
        self._runner: asyncio.Task | None = None
        self._ready: asyncio.Event | None = None

    async def ensure_running(self) -> None:
        if self._runner is None:
            manager = self.manager = StreamableHTTPSessionManager(
                app=self.server, json_response=True, stateless=True, security_settings=SECURITY
            )
            ready = self._ready = asyncio.Event()

            async def run() -> None:
                async with manager.run():
                    ready.set()
                    await asyncio.Event().wait()

            self._runner = asyncio.get_running_loop().create_task(run(), name=self.task_name)
        await self._ready.wait()

    async def handle_request(self, scope, receive, send) -> None:
        if scope.get("method") == "POST":
            body = await read_body(receive)
            if malformed_id(body):
                return await invalid_request(send, "Invalid Request: an id must be a string, a number or null")
            receive = replayed(body, receive)
        await self.ensure_running()
        await self.manager.handle_request(scope, receive, send)

    async def stop(self) -> None:
        if self._runner is not None:
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._runner
            self._runner = None


# An "id" key holding an object, an array or a boolean, or any \u escape (which could spell the key).
SUSPECT_ID = re.compile(rb'"id"\s*:\s*[\[{tf]|\\u')


async def read_body(receive) -> bytes:
    """The whole request body (daphne has already refused one over 2 MiB: groupx_site/body_limit.py)."""
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if message["type"] != "http.request" or not message.get("more_body"):
            return b"".join(chunks)


def malformed_id(body: bytes) -> bool:
    """A request or a batch whose ``id`` JSON-RPC does not allow (an object, an array, a boolean).
    The SDK would read such a message as a notification and drop it without an answer; everything
    else, including a body that is not JSON, is the SDK's to answer. Most bodies are passed by a
    cheap look for an ``"id"`` key holding something other than a string, a number or null."""
    if not SUSPECT_ID.search(body):
        return False
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):
        return False
    messages = parsed if isinstance(parsed, list) else [parsed]
    return any(isinstance(m, dict) and isinstance(m.get("id"), dict | list | bool) for m in messages)


async def invalid_request(send, message: str) -> None:
    """JSON-RPC's Invalid Request (-32600, ``id`` null), with HTTP 400 as the SDK answers its own."""
    await send_json(send, 400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}})


server = tool_server("groupx", INSTRUCTIONS, TOOLS)
list_tools = tool_lister(TOOLS)
endpoint = Endpoint(server, "mcp-session-manager")
ensure_running = endpoint.ensure_running
stop = endpoint.stop


def binding_state(presented: bytes) -> tuple[str, str | None]:
    """``ok``, ``unavailable`` or ``unknown``, and the stored id of the binding ``presented`` names
    (compared in constant time: ``agents.instances.match_active_binding``)."""
    binding = instances.match_active_binding(presented)
    if binding is None:
        return "unknown", None
    state = "unavailable" if (binding["capabilities"] or {}).get("mcp") == "unavailable" else "ok"
    return state, binding["binding_id"]


def transport_refusal(scope) -> GroupXError | None:
    """What a hostile page can send, refused as on REST (``groupx_site/core/http.py``) and before
    the binding is looked up: a foreign Host (DNS rebinding: 421, as the SDK's own guard, which
    still runs after this one), a write that is not JSON (415) and a foreign Origin (403)."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
    host = headers.get("host", "")
    if not is_own_host(host):
        return foreign_host(status=421)
    if scope.get("method") in WRITE_METHODS and (refusal := refused_content_type(headers.get("content-type", ""))):
        return refusal
    return refused_origin(headers.get("origin"), host)


def _json_rpc_code(status: int) -> int:
    """Invalid params for a bad binding (400), invalid request for a refused one (403, 415, 421),
    internal error for the server's own state (503)."""
    return -32603 if status >= 500 else -32602 if status == 400 else -32600


async def json_rpc_error(send, error: GroupXError) -> None:
    await send_json(
        send,
        error.status,
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": _json_rpc_code(error.status), "message": error.message, "data": {"code": error.code}},
        },
    )


async def send_json(send, status: int, payload: dict) -> None:
    body = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


_REFUSED = object()


async def front_door(scope, send, lookup):
    """What both MCP endpoints do first: the transport rules, then ``lookup(presented header)`` on
    a reader thread (None when no header came). Returns its result, or ``_REFUSED`` once the
    refusal has been answered."""
    refusal = transport_refusal(scope)
    if refusal is not None:
        await json_rpc_error(send, refusal)
        return _REFUSED
    presented = next((v for k, v in scope.get("headers", []) if k.lower() == BINDING_HEADER), None)
    try:
        return await db.read(lookup)(presented) if presented else None
    except store_faults.StoreUnavailable as fault:
        await json_rpc_error(send, GroupXError(ErrorCode.STORE_UNAVAILABLE, fault.message))
        return _REFUSED


def refused(found) -> bool:
    return found is _REFUSED


async def handle(scope, receive, send) -> None:
    found = await front_door(scope, send, binding_state)
    if refused(found):
        return
    state, binding_id = found or ("unknown", None)
    if state == "unknown":
        return await json_rpc_error(
            send, GroupXError(ErrorCode.MCP_BINDING_MISMATCH, "missing, unknown or closed GroupX binding")
        )
    if state == "unavailable":
        return await json_rpc_error(
            send, GroupXError(ErrorCode.MCP_UNAVAILABLE, "MCP is not verified for this session")
        )
    # The tools get the stored id, so nothing past this point looks anything up by what was presented.
    await endpoint.handle_request({**scope, "groupx.binding": binding_id}, receive, send)

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
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from agents import instances
from agents.mcp.tools import INSTRUCTIONS, TOOLS
from groupx_site.core import db, store_faults
from groupx_site.core.bodies import check_json_value
from groupx_site.core.errors import ErrorCode, GroupXError
from groupx_site.core.http import (
    WRITE_METHODS,
    foreign_host,
    is_own_host,
    refused_content_type,
    refused_origin,
)

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


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[types.Tool(name=tool.name, description=tool.description, input_schema=tool.input_schema)
               for tool in TOOLS.values()]
    )


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    binding_id = ctx.request.scope.get("groupx.binding") if ctx.request is not None else None
    tool = TOOLS.get(params.name)
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


server = Server("groupx", version="0.1.0", instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool)
manager: StreamableHTTPSessionManager | None = None
_runner: asyncio.Task | None = None
_ready: asyncio.Event | None = None


async def ensure_running() -> None:
    """``run()`` of a session manager can be entered once: keep it open in one long-lived task."""
    global manager, _runner, _ready
    if _runner is None:
        manager = StreamableHTTPSessionManager(app=server, json_response=True, stateless=True,
                                               security_settings=SECURITY)
        _ready = asyncio.Event()

        async def run() -> None:
            async with manager.run():
                _ready.set()
                await asyncio.Event().wait()

        _runner = asyncio.get_running_loop().create_task(run(), name="mcp-session-manager")
    await _ready.wait()


async def stop() -> None:
    global _runner
    if _runner is not None:
        _runner.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await _runner
        _runner = None


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


async def _json_rpc_error(send, error: GroupXError) -> None:
    status = error.status
    body = json.dumps({"jsonrpc": "2.0", "id": None,
                       "error": {"code": _json_rpc_code(status), "message": error.message,
                                 "data": {"code": error.code}}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def handle(scope, receive, send) -> None:
    refusal = transport_refusal(scope)
    if refusal is not None:
        return await _json_rpc_error(send, refusal)
    presented = next((v for k, v in scope.get("headers", []) if k.lower() == BINDING_HEADER), None)
    try:
        state, binding_id = await db.read(binding_state)(presented) if presented else ("unknown", None)
    except store_faults.StoreUnavailable as fault:
        return await _json_rpc_error(send, GroupXError(ErrorCode.STORE_UNAVAILABLE, fault.message))
    if state == "unknown":
        return await _json_rpc_error(
            send, GroupXError(ErrorCode.MCP_BINDING_MISMATCH, "missing, unknown or closed GroupX binding"))
    if state == "unavailable":
        return await _json_rpc_error(send, GroupXError(ErrorCode.MCP_UNAVAILABLE, "MCP is not verified for this session"))
    await ensure_running()
    # The tools get the stored id, so nothing past this point looks anything up by what was presented.
    await manager.handle_request({**scope, "groupx.binding": binding_id}, receive, send)

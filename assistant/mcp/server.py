"""``/mcp/operator``: the operator MCP endpoint (FEATURES §13, PROTOCOL §12).

The same SDK style and the same front door as the member endpoint (``agents/mcp/server.py``: a
foreign Host, a foreign Origin or a non-JSON write refused first), with its own caller rule: the
``X-GroupX-Binding`` header must be the token of an open brain session
(``assistant/operator_binding.py``, compared in constant time). Anything else (a member's
binding, the fixed ``binding:operator`` id itself, no header) is HTTP 400 ``MCP_BINDING_MISMATCH``.
The tools then act as ``binding:operator``; they are declared in ``assistant/mcp/tools.py``.
"""

from __future__ import annotations

from agents.mcp.server import Endpoint, front_door, json_rpc_error, refused, tool_server
from assistant.mcp.tools import INSTRUCTIONS, OPERATOR_TOOLS
from assistant.operator_binding import match_operator_token
from groupx_site.core.errors import ErrorCode, GroupXError
from groupx_site.core.ids import OPERATOR_BINDING_ID

server = tool_server("groupx-operator", INSTRUCTIONS, OPERATOR_TOOLS)
endpoint = Endpoint(server, "mcp-operator-session-manager")
stop = endpoint.stop


async def handle(scope, receive, send) -> None:
    matched = await front_door(scope, send, match_operator_token)
    if refused(matched):
        return
    if not matched:
        return await json_rpc_error(
            send,
            GroupXError(ErrorCode.MCP_BINDING_MISMATCH, "the operator tools need the room assistant's session binding"),
        )
    await endpoint.handle_request({**scope, "groupx.binding": OPERATOR_BINDING_ID}, receive, send)

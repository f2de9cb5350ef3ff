"""The member tool table (agents/mcp/tools.py): what tools/list shows, and the limits it carries."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agents.mcp import server
from agents.mcp.tools import TOOLS, member_tool
from memory.inputs import LIST_MAX, MAX_QUERY
from rooms.validation import MAX_CLIENT_COMMAND_ID, MAX_TARGETS
from setup_wizard.config import MESSAGE_CHARACTERS
from turns.asks import MAX_WAIT_MS
from turns.member_actions import READ_MAX_LIMIT
from turns.watch import MAX_WATCH_MS

# tools/list as it was when names, schemas and handlers lived in two files (recorded before the
# table replaced them): the table must keep every name, description and schema as it was. Changed
# since only on purpose: send/ask's supervision, watch and steer built (docs/DECISIONS.md D40).
RECORDED = Path(__file__).with_name("mcp_tools_list.json")


def listed() -> dict:
    # On its own thread: the browser tests' sync Playwright keeps an event loop running in this one.
    with ThreadPoolExecutor(1) as pool:
        tools = pool.submit(asyncio.run, server.list_tools(None, None)).result()
    return {
        "instructions": server.server.instructions,
        "tools": tools.model_dump(mode="json", by_alias=True, exclude_none=True)["tools"],
    }


def test_tools_list_is_what_it_was_before_the_table():
    assert json.dumps(listed(), indent=1) + "\n" == RECORDED.read_text()


def schema(tool: str, field: str) -> dict:
    return TOOLS[tool].input_schema["properties"][field]


def test_the_schemas_carry_the_limits_the_actions_enforce():
    for name, tool in TOOLS.items():
        properties = tool.input_schema["properties"]
        if "content" in properties:
            assert properties["content"]["maxLength"] == MESSAGE_CHARACTERS, name
        if "clientCommandId" in properties:
            assert properties["clientCommandId"]["maxLength"] == MAX_CLIENT_COMMAND_ID, name
        if "to" in properties:
            assert properties["to"]["maxItems"] == MAX_TARGETS, name
        if "timeoutMs" in properties:  # a watch may wait as long as a worker's Turn (FEATURES §12)
            assert properties["timeoutMs"]["maximum"] == (MAX_WATCH_MS if name == "watch" else MAX_WAIT_MS), name
    assert schema("read", "limit")["maximum"] == READ_MAX_LIMIT
    assert schema("memory_search", "limit")["maximum"] == schema("identity_read", "limit")["maximum"] == LIST_MAX
    assert schema("memory_search", "query")["maxLength"] == MAX_QUERY
    assert f"at most {MAX_WAIT_MS // 1000} s" in TOOLS["ask"].description


def test_every_tool_is_called_through_a_coroutine_and_has_no_dot_in_its_name():
    for name, tool in TOOLS.items():
        assert asyncio.iscoroutinefunction(tool.handler) and "." not in name


def test_a_tool_declared_twice_is_refused():
    with pytest.raises(ValueError, match="declared twice"):
        member_tool("send", "again", {})(lambda binding_id, payload: {})

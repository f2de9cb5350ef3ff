"""The error-code table (groupx_site/core/errors.py): every code of FEATURES §19, each with its status."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from agents.drivers.base import DriverError
from groupx_site.core.errors import ErrorCode, GroupXError

ROOT = Path(__file__).resolve().parent.parent
# FEATURES §19, read from the copy in the repository (docs/spec/FEATURES.md): the protocol set,
# then the implementation-level codes, each in backquotes.
_SECTION_19 = re.search(r"^## 19\. .*?(?=^## )", (ROOT / "docs/spec/FEATURES.md").read_text(), re.S | re.M)
FEATURES_SECTION_19 = set(re.findall(r"`([A-Z][A-Z_]+)`", _SECTION_19.group(0))) if _SECTION_19 else set()

# What each code answered over HTTP before the table existed (the old HTTP_STATUS, 500 otherwise):
# the table must not change a single answer.
STATUS_BEFORE = {
    "INVALID_ENVELOPE": 400,
    "SENDER_FIELD_FORBIDDEN": 400,
    "SUPERVISION_PAIR_INVALID": 400,
    "SUPERVISION_WATCH_REQUIRED": 400,
    "SUPERVISION_STEER_REQUIRED": 400,
    "STEER_LIMIT_REACHED": 400,
    "UNKNOWN_ACTOR": 404,
    "UNKNOWN_TARGET": 404,
    "CLIENT_COMMAND_CONFLICT": 409,
    "TRANSPORT_MODE_MISMATCH": 409,
    "STORE_CONFLICT": 409,
    "DUPLICATE_DISPATCH": 409,
    "CAUSAL_CYCLE": 409,
    "ROOT_TURN_LIMIT_REACHED": 429,
    "HOP_LIMIT_REACHED": 429,
    "QUEUE_CAPACITY_REACHED": 429,
    "MESSAGE_TOO_LARGE": 413,
    "STORE_UNAVAILABLE": 503,
    "SESSION_NOT_AVAILABLE": 503,
    "NATIVE_POLICY_BLOCKED": 503,
    "MCP_UNAVAILABLE": 503,
    "INTERNAL_ERROR": 500,
    # Only ever sent by /mcp itself as HTTP 400 (agents/mcp/server.py); as a tool result it has no status.
    "MCP_BINDING_MISMATCH": 400,
}
CODE_LIKE = re.compile(
    r"^[A-Z]+(_[A-Z]+)*_(FOUND|FAILED|TIMEOUT|MESSAGE|AVAILABLE|UNSUPPORTED|BLOCKED|INTERACTION|"
    r"INTERRUPTED|MISMATCH|UNAVAILABLE|ENVELOPE|ACTOR|TARGET|FORBIDDEN|CONFLICT|DISPATCH|CYCLE|"
    r"REACHED|LARGE|REQUIRED|INVALID|EXCEEDED|ERROR)$"
)


def test_every_code_of_features_section_19_is_in_the_table_and_nothing_else_is():
    assert len(FEATURES_SECTION_19) == 35, sorted(FEATURES_SECTION_19)  # the section was found and read whole
    assert {code.value for code in ErrorCode} == FEATURES_SECTION_19


def test_every_code_keeps_the_http_status_it_answered_with_before_the_table():
    for code in ErrorCode:
        assert code.status == STATUS_BEFORE.get(code.value, 500), code


def test_a_groupx_error_takes_its_status_from_the_table_unless_the_edge_overrides_it():
    assert GroupXError("HOP_LIMIT_REACHED", "too deep").status == 429
    assert GroupXError("INVALID_ENVELOPE", "not JSON", status=415).status == 415
    assert type(GroupXError(ErrorCode.UNKNOWN_TARGET, "who?").code) is str


def test_a_code_that_is_not_in_the_table_is_refused_when_the_error_is_built():
    with pytest.raises(ValueError, match="not a GroupX error code"):
        GroupXError("INVALID_ENVELOP", "typo")
    with pytest.raises(ValueError, match="not a GroupX error code"):
        DriverError("ADAPTER_START_FAILD", "typo")


def test_every_code_like_literal_in_the_apps_is_declared_in_the_table():
    declared = {code.value for code in ErrorCode}
    strays = []
    for path in ROOT.rglob("*.py"):
        relative = path.relative_to(ROOT)
        if relative.parts[0] in {"tests", ".venv"} or "tests" in relative.parts or "fakes" in relative.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            literal = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
            if CODE_LIKE.match(literal) and literal not in declared:
                strays.append(f"{relative}:{node.lineno} {node.value}")
    assert strays == []

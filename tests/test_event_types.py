"""The event-type table (rooms/event_types.py): every type the code emits or the page reads is
declared there, the derived lists match it, and an undeclared type never reaches the log."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from rooms import event_types
from rooms.event_types import AUDIT_TYPES, CONTEXT_TYPES, FORBIDDEN_PREFIXES, REGISTRY, UndeclaredEventType

ROOT = Path(__file__).resolve().parent.parent
APP_PACKAGES = ("agents", "groupx_site", "memory", "rooms", "setup_wizard", "turns")
EVENT_TYPE_LIKE = re.compile(r"^(message|operator|turn|tool|session|memory|identity|context|routing)\.[a-z_.]+$")
# Command types (receipts, turns.command_type), not event types: they share the dotted spelling.
COMMAND_TYPES = {
    "memory.remember",
    "memory.retract",
    "memory.supersede",
    "memory.core_remember",
    "identity.remember",
    "identity.retract",
    "identity.supersede",
    "context.compact",
}


def app_sources():
    for package in APP_PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "tests" not in path.relative_to(ROOT).parts and "fakes" not in path.parts:
                yield path


def emitted_types() -> set[str]:
    """Every literal passed as ``event_type=``, or spelled like an event type, in the apps; an
    f-string ``turn.{status}`` stands for each terminal status."""
    found = set()
    for path in app_sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and EVENT_TYPE_LIKE.match(node.value):
                found.add(node.value)
            if isinstance(node, ast.keyword) and node.arg == "event_type" and isinstance(node.value, ast.JoinedStr):
                prefix = node.value.values[0].value if isinstance(node.value.values[0], ast.Constant) else ""
                assert prefix in {"turn.", "context.compaction."}, f"{path}: an unchecked f-string event type"
                found.update(name for name in REGISTRY if name.startswith(prefix))
    return found - COMMAND_TYPES - {"tool.started", "tool.completed"}  # native tool phases inside a body


def test_every_event_type_the_code_spells_out_is_declared():
    assert sorted(emitted_types() - set(REGISTRY)) == []


def test_every_event_type_the_page_names_is_declared():
    named = set()
    for path in (ROOT / "static" / "rooms").glob("*.js"):
        named.update(
            re.findall(
                r'"((?:message|turn|session|memory|identity|context|routing|operator)\.[a-z_.]*[a-z_])"',
                path.read_text(),
            )
        )
    # A system.error condition's family ("memory.dated" of "memory.dated:agent:kimi") reads like a
    # type; the page keys its sentences by them, and the server builds them as f"<family>:{...}".
    families = set()
    for package in ("rooms", "memory", "turns", "agents", "assistant", "groupx_site"):
        for path in (ROOT / package).rglob("*.py"):
            families.update(re.findall(r'f"([a-z_.]+):\{', path.read_text()))
    assert "memory.dated" in families
    assert sorted(named - set(REGISTRY) - families) == []


def test_the_context_and_audit_lists_derive_from_the_audiences():
    assert CONTEXT_TYPES == ("message.created", "operator.dispatch")  # memory/sql.py binds them in this order
    assert set(AUDIT_TYPES) == {"turn.reasoning.recorded", "tool.progress.recorded"}
    from memory.transcript import CONTEXT_TYPES as transcript_types
    from turns.member_actions import AUDIT_ONLY_TYPES

    assert transcript_types == CONTEXT_TYPES and AUDIT_ONLY_TYPES == AUDIT_TYPES


def test_a_turn_terminal_exists_for_every_final_status():
    from turns.states import CANCELLED, COMPLETED, FAILED, INTERRUPTED

    assert {f"turn.{status}" for status in (COMPLETED, FAILED, CANCELLED, INTERRUPTED)} == set(
        event_types.TURN_TERMINALS.values()
    )


def test_an_undeclared_type_is_refused_with_an_error_not_an_assert():
    with pytest.raises(UndeclaredEventType, match="not declared"):
        event_types.check("message.craeted", event_types.DURABLE, {"content": "x"})
    with pytest.raises(UndeclaredEventType, match="forbidden namespace"):
        event_types.check("approval.requested", event_types.DURABLE, {})


def test_a_type_written_with_the_wrong_durability_or_a_thin_body_is_refused():
    with pytest.raises(UndeclaredEventType, match="declared transient"):
        event_types.check(event_types.TURN_CONTENT_DELTA, event_types.DURABLE, {})
    with pytest.raises(UndeclaredEventType, match="lacks turnId"):
        event_types.check(event_types.TURN_STARTED, event_types.DURABLE, {"attemptId": "att_1"})


def test_no_declared_type_lies_in_a_forbidden_namespace():
    assert not [name for name in REGISTRY if name.startswith(FORBIDDEN_PREFIXES)]


def test_bootstrap_hands_the_page_the_table_and_the_forbidden_namespaces(room):
    snapshot = room.get("/api/bootstrap").json()

    assert snapshot["eventTypes"]["forbiddenPrefixes"] == ["approval.", "permission.", "user_input."]
    by_name = {entry["type"]: entry for entry in snapshot["eventTypes"]["types"]}
    assert by_name["message.created"] == {
        "type": "message.created",
        "durability": "durable",
        "audience": "context",
        "body": ["content"],
    }
    assert by_name["turn.content.delta"]["durability"] == "transient"
    assert set(by_name) == set(REGISTRY)

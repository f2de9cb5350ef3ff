"""A presented MCP binding is matched in constant time (agents/instances.py, docs/DECISIONS.md D39):
only the exact id of an active agent binding matches, and the presented token never reaches SQL."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents import instances
from agents.models import Actor, SessionBinding
from groupx_site.core.ids import WEB_BINDING_ID
from tests.unit.room import bind


def test_the_exact_id_of_an_active_agent_binding_matches_and_names_the_stored_row():
    binding_id = bind("agent:alpha")
    bind("agent:beta")

    found = instances.match_active_binding(binding_id.encode())

    assert found is not None and found["binding_id"] == binding_id


def test_a_near_miss_matches_nothing():
    binding_id = bind("agent:alpha")
    near = [
        binding_id[:-1],
        binding_id + "x",
        binding_id[:-1] + chr(ord(binding_id[-1]) ^ 1),
        binding_id.upper(),
        f" {binding_id}",
        "",
    ]

    assert [instances.match_active_binding(token.encode()) for token in near] == [None] * len(near)
    assert instances.match_active_binding(binding_id.encode() + b"\xff") is None


def test_a_closed_binding_and_the_web_users_binding_match_nothing():
    closed = bind("agent:alpha")
    SessionBinding.objects.filter(binding_id=closed).update(status="closed")
    Actor.objects.get_or_create(actor_id="user:web", defaults={"kind": "user", "display_name": "You"})
    SessionBinding.objects.get_or_create(
        binding_id=WEB_BINDING_ID, defaults={"actor_id": "user:web", "protocol": "web"}
    )

    assert instances.match_active_binding(closed.encode()) is None
    assert instances.match_active_binding(WEB_BINDING_ID.encode()) is None


def test_the_presented_token_never_reaches_a_query():
    bind("agent:alpha")
    presented = "bind_guess_0123456789abcdef"

    with CaptureQueriesContext(connection) as queries:
        instances.match_active_binding(presented.encode())

    assert queries.captured_queries and not any(presented in query["sql"] for query in queries.captured_queries)

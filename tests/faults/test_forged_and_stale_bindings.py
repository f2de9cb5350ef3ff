"""A member MCP call acts only as the agent whose live binding it carries (FEATURES §4, §11).

A forged binding, a stale one (from the agent's previous instance, or from before the server
restarted) and another agent's binding used to speak as a third agent are each refused with the
protocol's code, and nothing is written: the log's head and the command receipts stay as they
were. Every refused call is a write (``publish``) made while the real owner of a live binding is
in a Turn, so the same call with the right binding would have been written.
"""

from __future__ import annotations

import secrets

import pytest

from tests.agents import active_binding, cancel, fake_agents, send, wait_terminal
from tests.faults.refusals import hang_turn, publish_call, tool_error_code, what_is_written

NEVER = {"handshakeMs": 600_000, "closeMs": 300, "firstEventMs": 600_000, "idleMs": 600_000}


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    """kimi, hermes and grok; hermes is in a Turn for the whole module."""
    from tests.server import GroupXServer

    workdir = tmp_path_factory.mktemp("bindings")
    server = GroupXServer(
        workdir,
        {
            "server": {"host": "127.0.0.1", "port": 4310},
            "timeouts": NEVER,
            "agents": fake_agents(workdir, "kimi", "hermes", "grok"),
        },
    ).start()
    hang_turn(server, "hermes")
    yield server
    server.stop()


def publish(text: str) -> dict:
    return {"content": text, "clientCommandId": f"c-{secrets.token_hex(6)}"}


def message_of(server, response) -> dict:
    published = response.json()["result"]["structuredContent"]
    return next(e for e in server.events() if e["eventId"] == published["messageEventId"])


def altered(binding: str) -> str:
    """The same binding with its last character changed: what a guess next to a real one looks like."""
    return binding[:-1] + ("A" if binding[-1] != "A" else "B")


@pytest.mark.parametrize("forgery", ["never issued", "one character off a live one", "the web's", "the operator's"])
def test_a_forged_binding_is_refused_with_binding_mismatch_and_writes_nothing(room, forgery):
    live = active_binding(room, "agent:hermes")
    forged = {
        "never issued": f"bind_{secrets.token_urlsafe(24)}",
        "one character off a live one": altered(live),
        "the web's": "binding:web",
        "the operator's": "binding:operator",
    }[forgery]
    before = what_is_written(room)

    refused = publish_call(room, forged, publish("said with a forged binding"))

    assert refused.status_code == 400
    assert tool_error_code(refused) == "MCP_BINDING_MISMATCH"
    assert what_is_written(room) == before
    accepted = publish_call(room, live, publish("said with hermes' own binding"))
    assert message_of(room, accepted)["actor"]["actorId"] == "agent:hermes"


@pytest.mark.parametrize("field", ["from", "actor", "provenance", "eventId"])
def test_an_agents_binding_cannot_name_a_third_agent_as_the_sender(room, field):
    hermes = active_binding(room, "agent:hermes")
    before = what_is_written(room)

    refused = publish_call(room, hermes, {**publish("I am grok"), field: "agent:grok"})

    assert tool_error_code(refused) == "SENDER_FIELD_FORBIDDEN"
    assert what_is_written(room) == before


def test_an_idle_agents_binding_cannot_act_while_another_agent_is_in_its_turn(room):
    grok = active_binding(room, "agent:grok")  # grok has no Turn; hermes has one
    before = what_is_written(room)

    refused = publish_call(room, grok, publish("grok speaking in hermes' turn"))

    assert tool_error_code(refused) == "MCP_BINDING_MISMATCH"
    assert what_is_written(room) == before


def test_another_agents_command_id_gives_back_nothing_of_that_agent(room):
    # Receipts belong to the binding that made them: hermes replaying grok's clientCommandId gets a
    # message of its own, never grok's stored result (which would let it claim grok's words).
    grok_turn = hang_turn(room, "grok")
    shared = publish("the same words, the same command id")
    grok_said = message_of(room, publish_call(room, active_binding(room, "agent:grok"), shared))

    hermes_said = message_of(room, publish_call(room, active_binding(room, "agent:hermes"), shared))

    assert hermes_said["eventId"] != grok_said["eventId"]
    assert (grok_said["actor"]["actorId"], hermes_said["actor"]["actorId"]) == ("agent:grok", "agent:hermes")
    cancel(room, grok_turn)


def test_the_binding_of_an_agents_previous_instance_is_refused_while_its_new_instance_works(make_server, tmp_path):
    room = make_server(fake_agents(tmp_path, "kimi"), timeouts=NEVER)
    previous = active_binding(room, "agent:kimi")
    crashed = send(room, "agent:kimi", "[[fake: crash code=7 after=delta]]")["turns"][0]["turnId"]
    assert wait_terminal(room, crashed, timeout=60)["type"] == "turn.failed"
    hang_turn(room, "kimi")  # on the rebuilt session
    current = active_binding(room, "agent:kimi")
    assert current != previous
    before = what_is_written(room)

    refused = publish_call(room, previous, publish("said with the dead instance's binding"))

    assert refused.status_code == 400
    assert tool_error_code(refused) == "MCP_BINDING_MISMATCH"
    assert what_is_written(room) == before
    assert message_of(room, publish_call(room, current, publish("said now")))["actor"]["actorId"] == "agent:kimi"


def test_a_binding_from_before_the_server_restarted_is_refused(make_server, tmp_path):
    room = make_server(fake_agents(tmp_path, "kimi"), timeouts=NEVER)
    hang_turn(room, "kimi")
    previous = active_binding(room, "agent:kimi")
    room.restart()  # the hanging Turn ends interrupted; kimi gets a new instance and binding
    hang_turn(room, "kimi")
    before = what_is_written(room)

    refused = publish_call(room, previous, publish("said with the previous process's binding"))

    assert refused.status_code == 400
    assert tool_error_code(refused) == "MCP_BINDING_MISMATCH"
    assert what_is_written(room) == before

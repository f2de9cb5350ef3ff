"""The Turn admin against a real server (docs/DECISIONS.md D96): an operator logged in to Django's
admin cancels a running Turn and a queued one with the "Cancel" action, which runs the REST
cancel's command; the running Turn's CLI gets its native cancel (the fake's wire log) and both end
``turn.cancelled`` in the room."""

from __future__ import annotations

import json

from tests.agents import admin_session, csrf, db_rows, fake_agents, send, turn_events, wait_terminal, wire
from tests.server import wait_until


def test_the_admin_cancels_a_running_and_a_queued_turn_through_the_rest_cancel(make_server, tmp_path):
    room = make_server(fake_agents(tmp_path, "kimi"))
    running = send(room, "agent:kimi", "[[fake: hang]]")["turns"][0]["turnId"]
    queued = send(room, "agent:kimi", "after it")["turns"][0]["turnId"]
    wait_until(
        lambda: any(e["type"] == "turn.started" for e in turn_events(room, running)),
        timeout=20,
        message="the first Turn running",
    )

    with admin_session(room) as browser:
        listing = browser.get("/admin/turns/turn/")
        assert running in listing.text and queued in listing.text
        done = browser.post(
            "/admin/turns/turn/",
            data={
                "csrfmiddlewaretoken": csrf(listing.text),
                "action": "cancel_turns",
                "_selected_action": [running, queued],
                "index": "0",
            },
        )

    assert done.status_code == 200 and "Cancel asked for" in done.text
    assert wait_terminal(room, queued)["type"] == "turn.cancelled"
    assert wait_terminal(room, running)["type"] == "turn.cancelled"
    assert [m for m in wire(room, "kimi", kind="in") if (m.get("msg") or {}).get("method") == "session/cancel"]
    receipts = db_rows(room, "SELECT result FROM rooms_clientcommand WHERE command_type = 'web.cancel'")
    assert sorted(json.loads(r["result"])["turnId"] for r in receipts) == sorted([running, queued])

"""The operators' admin (Django's), through pytest-django's logged-in client: Turns with their
"Cancel" action, which runs the REST cancel's own command; supervision pairs, the workers' rows and
the agents' leases, read-only."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import AgentLease, RuntimeWorker
from groupx_site.core.ids import WEB_BINDING_ID
from rooms.models import ClientCommand, Event
from tests.unit.room import actor, post, queued_turn, running, status
from turns import lifecycle
from turns.lifecycle import TurnOutcome
from turns.models import SupervisionPair

TURNS = "/admin/turns/turn/"
PAIR = {"observers": ["agent:beta"], "mode": "live_steer"}


def cancel_in_the_admin(admin_client, *turn_ids: str):
    return admin_client.post(
        TURNS, {"action": "cancel_turns", "_selected_action": list(turn_ids), "index": "0"}, follow=True
    )


def cancel_receipts() -> list[ClientCommand]:
    return list(ClientCommand.objects.filter(source_binding_id=WEB_BINDING_ID, command_type="web.cancel"))


def test_the_admin_cancels_a_queued_turn_with_the_rest_cancels_command(admin_client):
    turn_id = queued_turn("agent:alpha", "never mind")

    page = cancel_in_the_admin(admin_client, turn_id)

    assert page.status_code == 200
    assert f"Cancel asked for {turn_id} (cancelled)" in page.content.decode()
    assert status(turn_id) == "cancelled"
    assert Event.objects.filter(event_type="turn.cancelled", body__turnId=turn_id).count() == 1
    [receipt] = cancel_receipts()  # the REST cancel's receipt: same binding, same command type
    assert (receipt.result["turnId"], receipt.result["status"]) == (turn_id, "cancelled")


def test_the_admin_moves_a_running_turn_to_cancelling_for_its_lane_to_stop(admin_client):
    turn_id = running(queued_turn("agent:alpha", "a long job")).turn_id

    page = cancel_in_the_admin(admin_client, turn_id)

    assert f"Cancel asked for {turn_id} (cancelling)" in page.content.decode()
    assert status(turn_id) == "cancelling"
    assert len(cancel_receipts()) == 1


def test_an_ended_turn_is_left_as_it_was_and_the_admin_says_so(admin_client):
    claimed = running(queued_turn("agent:alpha", "done already"))
    lifecycle.finish(claimed, claimed.turn_id, TurnOutcome(status="completed", content="ok"), actor("agent:alpha"))
    events_before = Event.objects.count()

    page = cancel_in_the_admin(admin_client, claimed.turn_id)

    assert f"Already ended, left as they were: {claimed.turn_id} (completed)" in page.content.decode()
    assert status(claimed.turn_id) == "completed"
    assert Event.objects.count() == events_before and cancel_receipts() == []


def test_the_admin_shows_a_supervision_pair_with_its_turns_read_only(admin_client):
    answer = post(["agent:alpha"], "write it", supervision=PAIR)
    pair = SupervisionPair.objects.get()
    worker, watcher = answer["turns"][0]["turnId"], answer["watchTurns"][0]["turnId"]

    listing = admin_client.get("/admin/turns/supervisionpair/")
    page = admin_client.get(f"/admin/turns/supervisionpair/{pair.pair_id}/change/")

    assert listing.status_code == 200 and pair.pair_id in listing.content.decode()
    text = page.content.decode()
    assert page.status_code == 200 and worker in text and watcher in text
    assert "worker" in text and "observer" in text
    assert admin_client.get("/admin/turns/supervisionpair/add/").status_code == 403
    assert admin_client.post(f"/admin/turns/supervisionpair/{pair.pair_id}/delete/", {"post": "yes"}).status_code == 403
    assert SupervisionPair.objects.count() == 1


@pytest.mark.parametrize("path", ["/admin/agents/runtimeworker/", "/admin/agents/agentlease/"])
def test_the_workers_and_the_agents_leases_are_listed_read_only(admin_client, path):
    now = timezone.now()
    RuntimeWorker.objects.create(
        worker_id="worker-live",
        mode="worker",
        host="elsewhere",
        pid=1,
        role="owner",
        started_at=now,
        heartbeat_at=now,
        expires_at=now + timedelta(minutes=1),
    )
    RuntimeWorker.objects.create(
        worker_id="worker-gone",
        mode="worker",
        host="elsewhere",
        pid=2,
        role="standby",
        started_at=now,
        heartbeat_at=now,
        expires_at=now - timedelta(minutes=1),
    )
    AgentLease.objects.create(actor_id="agent:alpha", worker_id="worker-live", acquired_at=now)
    AgentLease.objects.create(actor_id="agent:beta", worker_id="worker-gone", acquired_at=now)

    listing = admin_client.get(path)

    text = listing.content.decode()
    assert listing.status_code == 200
    assert "worker-live" in text and "worker-gone" in text
    # One live row, one not: the boolean column shows both icons.
    assert 'alt="True"' in text and 'alt="False"' in text
    assert admin_client.get(f"{path}add/").status_code == 403

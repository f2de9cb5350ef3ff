"""The sidebar's public memory panel and agents waiting for a restart (FEATURES §15.1, §17)."""

from __future__ import annotations

import json
import uuid

from playwright.sync_api import expect

from tests.agents import fake_agents
from tests.server import wait_until

ROOM = {"scopeType": "room", "scopeId": "room:main", "includeHistory": "true"}


def room_memory(server) -> list[dict]:
    return server.get("/api/memory", params=ROOM).json()["items"]


def memory_events(server) -> list[str]:
    return [e["type"] for e in server.events() if e["type"].startswith("memory.")]


def test_public_memory_is_added_replaced_and_retracted_from_the_panel(room, open_page):
    page = open_page(room)
    panel = page.locator("#memory-panel")
    expect(panel).to_have_attribute("open", "")
    expect(panel.locator(".mem-empty")).to_be_visible()
    expect(page.locator("#memory-count")).to_have_text("0")

    # Add: markup in memory is text, shown literally and never parsed.
    panel.get_by_label("New public memory").fill("Ship on <b>Fridays</b> only after CI is green")
    panel.get_by_label("Kind", exact=True).select_option("decision")
    panel.get_by_role("button", name="Remember").click()

    item = panel.locator(".mem-item")
    expect(item).to_have_count(1)
    expect(item.locator(".mem-kind")).to_have_text("decision")
    expect(item.locator(".mem-author")).to_have_text("You")
    expect(item.locator(".mem-content")).to_have_text("Ship on <b>Fridays</b> only after CI is green")
    expect(item.locator(".mem-content b")).to_have_count(0)
    expect(page.locator("#memory-count")).to_have_text("1")
    # The durable memory.remembered event reached the page through the stream.
    expect(page.locator('#durable .sys--memory[data-type="memory.remembered"]')).to_contain_text(
        "remembered a public decision"
    )
    [stored] = room_memory(room)
    assert (
        stored["content"] == "Ship on <b>Fridays</b> only after CI is green" and stored["authorActorId"] == "user:web"
    )

    # Replace: a new record supersedes the old one.
    item.get_by_role("button", name="Replace this decision").click()
    editor = item.get_by_label("New content")
    expect(editor).to_have_value("Ship on <b>Fridays</b> only after CI is green")
    editor.fill("Ship any day once CI is green")
    item.get_by_role("button", name="Save").click()

    expect(panel.locator(".mem-content")).to_have_text(["Ship any day once CI is green"])
    expect(page.locator('#durable .sys--memory[data-type="memory.superseded"]')).to_have_count(1)
    records = {r["status"]: r for r in room_memory(room)}
    assert records["active"]["supersedesMemoryId"] == records["superseded"]["memoryId"] == stored["memoryId"]

    # Retract asks first; "Keep" changes nothing.
    item = panel.locator(".mem-item")
    item.get_by_role("button", name="Retract this decision").click()
    expect(item.locator(".mem-confirm-text")).to_be_visible()
    item.get_by_role("button", name="Keep").click()
    expect(item.get_by_role("button", name="Retract this decision")).to_be_visible()
    item.get_by_role("button", name="Retract this decision").click()
    item.get_by_role("button", name="Yes, retract").click()

    expect(panel.locator(".mem-item")).to_have_count(0)
    expect(panel.locator(".mem-empty")).to_be_visible()
    expect(page.locator("#memory-count")).to_have_text("0")
    assert sorted(r["status"] for r in room_memory(room)) == ["retracted", "superseded"]
    wait_until(
        lambda: memory_events(room) == ["memory.remembered", "memory.superseded", "memory.retracted"],
        message="three memory events",
    )


def test_memory_written_elsewhere_appears_live_and_an_invalid_write_shows_its_code(room, open_page):
    page = open_page(room)
    panel = page.locator("#memory-panel")

    response = room.post(
        "/api/memory",
        {
            "clientCommandId": str(uuid.uuid4()),
            "scope": {"type": "room", "id": "room:main"},
            "kind": "fact",
            "content": "The staging DB is read-only",
        },
    )
    assert response.status_code == 201, response.text

    expect(panel.locator(".mem-content")).to_have_text(["The staging DB is read-only"])  # no reload

    panel.get_by_label("New public memory").fill("x" * 131_073)  # one past the limit
    panel.get_by_role("button", name="Remember").click()
    expect(panel.locator(".mem-add .mem-error code")).to_have_text("MESSAGE_TOO_LARGE")
    expect(panel.locator(".mem-item")).to_have_count(1)


def test_the_panel_folds_and_stays_folded_after_a_reload(room, open_page):
    page = open_page(room)
    panel = page.locator("#memory-panel")
    panel.locator("summary").click()
    expect(panel.get_by_label("New public memory")).to_be_hidden()

    page.reload()
    page.wait_for_selector("body[data-ready=true]", state="attached")
    expect(page.locator("#memory-panel")).not_to_have_attribute("open", "")


def test_an_agent_saved_after_start_is_shown_as_pending_restart_and_cannot_be_addressed(room, open_page, tmp_path):
    config = json.loads(room.config_path.read_text())
    config["agents"].update(fake_agents(tmp_path, "claude"))
    room.write_config(config)  # what /setup does: saved, not started until `groupx restart`

    page = open_page(room)

    card = page.locator('.agent-card[data-actor-id="agent:claude"]')
    expect(card).to_have_attribute("data-status", "pending_restart")
    expect(card.locator(".agent-status")).to_have_text("pending restart")
    expect(card.get_by_role("button", name="Memory")).to_have_count(0)
    expect(page.locator(".agent-card")).to_have_count(4)
    expect(page.locator("#agent-count")).to_contain_text("/4 ready")
    chips = page.locator("#recipient-chips .recipient")
    expect(chips).to_have_count(4)  # @all and the three live agents
    expect(chips.filter(has_text="claude")).to_have_count(0)

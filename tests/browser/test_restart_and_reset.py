"""The agent card's Restart button and the "Reset context" control (D41; FEATURES §3, §14, §17)."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.agents import fake_agents, send, wait_terminal
from tests.server import wait_until


def kimi_health(server) -> dict:
    return next(a for a in server.get("/api/health").json()["agents"] if a["actorId"] == "agent:kimi")


def events_of(server, kind: str) -> list[dict]:
    return [e for e in server.events() if e["type"] == kind]


def test_the_restart_button_asks_first_then_the_card_follows_the_new_instance(make_server, tmp_path, open_page):
    server = make_server(fake_agents(tmp_path, "kimi"))
    page = open_page(server)
    card = page.locator('.agent-card[data-actor-id="agent:kimi"]')
    expect(card).to_have_attribute("data-status", "ready", timeout=20_000)
    before = kimi_health(server)["instanceId"]
    restart = card.get_by_role("button", name="Restart Kimi's CLI")

    restart.click()
    dialog = page.get_by_role("dialog", name="Restart Kimi?")
    expect(dialog).to_contain_text("interrupted; what it wrote so far is kept")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_have_count(0)
    restart.click()
    page.get_by_role("dialog", name="Restart Kimi?").get_by_role("button", name="Restart").click()

    wait_until(
        lambda: (
            kimi_health(server).get("instanceId") not in (None, before) and kimi_health(server)["status"] == "ready"
        ),
        timeout=20,
        message="kimi on a new instance",
    )
    expect(card).to_have_attribute("data-status", "ready")
    stopped = events_of(server, "session.stopped")
    assert [e["body"]["reason"] for e in stopped] == ["restart"]  # the cancelled question sent nothing
    assert stopped[0]["actor"]["instanceId"] == before


def test_reset_context_says_what_is_kept_and_resets_the_native_sessions_by_default(make_server, tmp_path, open_page):
    server = make_server(fake_agents(tmp_path, "kimi"))
    assert (
        wait_terminal(server, send(server, "agent:kimi", "remember the tortoise")["turns"][0]["turnId"])["type"]
        == "turn.completed"
    )
    page = open_page(server)
    reset = page.get_by_role("button", name="Reset context")

    reset.click()
    dialog = page.get_by_role("dialog", name="Reset the room's context?")
    expect(dialog).to_contain_text("Kept: the whole log")
    expect(dialog).to_contain_text("all memory")
    expect(dialog).to_contain_text("Forgotten: the conversation so far")
    fresh = dialog.get_by_role("checkbox", name="Also start every agent's CLI on a fresh session", exact=False)
    expect(fresh).to_be_checked()
    dialog.get_by_role("button", name="Reset context").click()

    status = page.locator("#compaction-status")
    expect(status).to_have_text("Context reset: agents start from here, each on a fresh CLI session.")
    expect(page.locator("#context-meter .meter-percent")).to_have_text("0%")
    event = events_of(server, "context.reset")[-1]
    assert event["body"]["resetNativeSessions"] is True and event["provenance"]["sourceKind"] == "web"
    wait_until(
        lambda: [e["body"]["reason"] for e in events_of(server, "session.stopped")] == ["context_reset"],
        timeout=20,
        message="kimi's native session closed",
    )

    send(server, "agent:kimi", "after the reset")
    reset.click()
    dialog = page.get_by_role("dialog", name="Reset the room's context?")
    dialog.get_by_role("checkbox").uncheck()
    dialog.get_by_role("button", name="Reset context").click()
    expect(status).to_have_text("Context reset: agents start from here.")
    assert events_of(server, "context.reset")[-1]["body"]["resetNativeSessions"] is False

"""/setup applies what it saved: "Restart GroupX now" does what ``groupx restart`` does (this
runtime stops, the same process starts a fresh one with the saved config), and the room's open
page reconnects by itself."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.agents import fake_agents
from tests.server import GroupXServer, free_port


def test_restart_now_starts_the_saved_roster_and_the_open_room_reconnects(tmp_path, browser, open_page):
    server = GroupXServer(tmp_path, {"agents": fake_agents(tmp_path, "kimi"), "timeouts": {"closeMs": 300}})
    try:
        server.start(port=free_port())
        pid = server.proc.pid
        before = server.get("/api/health").json()
        room_page = open_page(server)
        expect(room_page.locator("#connection")).to_have_attribute("data-state", "live")

        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        page.goto(server.url("/setup"))
        expect(page.locator("#setup-form")).to_be_visible(timeout=15_000)
        expect(page.locator("#restart-now")).to_be_hidden()
        page.locator("#demo-picker").select_option(label="Demo Hermes (hermes)")
        page.locator("#save").click()
        expect(page.locator("#banner")).to_contain_text("Saved 2 agents")

        page.get_by_role("button", name="Restart GroupX now").click()
        expect(page.locator("#banner")).to_contain_text("GroupX restarted with the saved settings", timeout=90_000)

        after = server.get("/api/health").json()
        assert after["runtimeKey"] != before["runtimeKey"]  # a fresh runtime, from the saved file
        assert after["runtimeScopeKey"] == before["runtimeScopeKey"]
        assert server.proc.pid == pid and server.proc.poll() is None  # the same process, still in its terminal
        assert {a["actorId"] for a in after["agents"]} == {"agent:kimi", "agent:demo-hermes"}

        expect(room_page.locator("#connection")).to_have_attribute("data-state", "live", timeout=60_000)
        page.context.close()
    finally:
        server.stop()

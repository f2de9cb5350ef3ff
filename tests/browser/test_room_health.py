"""The room page says plainly when GroupX is starting or degraded (FEATURES §16, docs/DECISIONS.md D42)."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.agents import fake_agents
from tests.server import GroupXServer


def test_the_page_says_starting_until_the_agents_have_started_then_names_the_one_that_keeps_failing(
        tmp_path, open_page):
    release = tmp_path / "release-the-handshake"
    agents = fake_agents(tmp_path, "kimi", "grok", scenarios={
        "kimi": {"initialize_wait_for_file": str(release)},  # slow to start, until the test says so
        "grok": {"exit_on_start": {"code": 3, "stderr": "no luck"}},  # never starts
    })
    server = GroupXServer(tmp_path, {"agents": agents, "timeouts": {"handshakeMs": 60000, "closeMs": 300}},
                          env={"GROUPX_SESSION_START_WAIT_MS": "60000"})
    try:
        server.start(wait_ready=False)
        page = open_page(server)
        line = page.locator("#room-health")

        expect(line).to_have_attribute("data-state", "starting")
        expect(line).to_be_visible()
        expect(line).to_contain_text("Starting")

        release.touch()

        expect(line).to_have_attribute("data-state", "degraded")
        expect(line).to_contain_text(re.compile(r"Degraded — grok keeps failing to start"))
        expect(page.locator('.agent-card[data-actor-id="agent:grok"]')).to_have_attribute("data-status", "degraded")
        expect(page.locator('.agent-card[data-actor-id="agent:kimi"]')).to_have_attribute("data-status", "ready")
    finally:
        release.touch()
        server.stop()

"""The room page's agent card says where each agent runs (docs/DECISIONS.md D51), in Debian's
Chromium as the browser tier drives it; skipped where there is no Chromium."""

from __future__ import annotations

import re

import pytest

from tests.browser.chromium import CHROMIUM, launch_options
from tests.remote.sshd import ALIAS


@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"needs Debian's Chromium at {CHROMIUM}")
def test_the_agent_card_shows_the_ssh_destination_before_a_remote_agents_path_and_nothing_for_a_local_one(mixed_room):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(**launch_options())
        try:
            page = browser.new_page()
            page.goto(mixed_room.url("/"))
            page.wait_for_selector("body[data-ready=true]", state="attached", timeout=30_000)
            remote = page.locator('.agent-card[data-actor-id="agent:kimi"] .agent-cwd')
            local = page.locator('.agent-card[data-actor-id="agent:codex"] .agent-cwd')

            expect(remote).to_have_text(re.compile(rf"^{re.escape(ALIAS)}:….*/remote-kimi$"), timeout=30_000)
            expect(remote).to_have_attribute("title", f"runs on {ALIAS} (ssh): {mixed_room.workdir / 'remote-kimi'}")
            expect(local).not_to_contain_text(ALIAS)
        finally:
            browser.close()

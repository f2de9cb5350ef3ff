"""The room page says plainly when GroupX is starting or degraded (FEATURES §16, docs/DECISIONS.md D42)."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.agents import fake_agents, send
from tests.server import GroupXServer


def test_the_page_says_starting_until_the_agents_have_started_then_names_the_one_that_keeps_failing(
    tmp_path, open_page
):
    release = tmp_path / "release-the-handshake"
    agents = fake_agents(
        tmp_path,
        "kimi",
        "grok",
        scenarios={
            "kimi": {"initialize_wait_for_file": str(release)},  # slow to start, until the test says so
            "grok": {"exit_on_start": {"code": 3, "stderr": "no luck"}},  # never starts
        },
    )
    server = GroupXServer(
        tmp_path,
        {"agents": agents, "timeouts": {"handshakeMs": 60000, "closeMs": 300}},
        env={"GROUPX_SESSION_START_WAIT_MS": "60000"},
    )
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


def test_a_cli_that_keeps_failing_to_start_is_a_problem_in_words_on_its_card_and_in_the_timeline_until_it_heals(
    tmp_path, open_page
):
    agents = fake_agents(tmp_path, "kimi", scenarios={"kimi": {"exit_on_start": {"code": 3, "stderr": "no luck"}}})
    server = GroupXServer(
        tmp_path,
        {"agents": agents, "timeouts": {"handshakeMs": 60000, "closeMs": 300}},
        env={"GROUPX_SESSION_START_WAIT_MS": "60000"},
    )
    try:
        server.start(timeout=90)
        page = open_page(server)
        problem = page.locator('#durable .sys--system-error[data-condition="session:agent:kimi"]')
        card_line = page.locator('.agent-card[data-actor-id="agent:kimi"] .agent-problem')

        expect(problem.first).to_have_attribute("data-tone", "err")
        expect(problem.first).to_contain_text("could not start")
        expect(problem.first).to_contain_text("ADAPTER_START_FAILED")
        expect(card_line).to_be_visible()
        expect(card_line).to_contain_text("could not start")

        (tmp_path / "cwd-kimi" / ".groupx-fake.json").write_text("{}")  # the CLI is fixed
        send(server, "agent:kimi", "are you back?")

        expect(problem).to_have_count(2)
        expect(problem.last).to_have_attribute("data-tone", "ok")
        expect(problem.last).to_contain_text("started again")
        expect(card_line).to_be_hidden()
    finally:
        server.stop()

"""The Agent Settings page (/setup) and the demo-agents banner in a real browser (FEATURES §2.3).

The first run writes a starter config and serves the room at once (docs/DECISIONS.md D26): with no
agent CLI on PATH the room runs the demo agents and a banner offers /setup; the page shows the CLIs
this machine has open and folds the others away, and the room assistant's card. In a running
instance a save asks for a restart and the room shows the new agent as pending restart. Every wait is a page condition (Playwright's expect) or a deadline,
never a sleep.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.room_page import address, expect_final, reply, say
from tests.groupx_cli import isolated_path
from tests.server import FAKES_BIN, GroupXServer


@pytest.fixture
def page_errors():
    """Uncaught script errors and CSP refusals seen by the pages of a test (none allowed)."""
    errors: list[str] = []

    def watch(page: Page) -> Page:
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda message: "Content Security Policy" in message.text and errors.append(message.text))
        return page

    yield watch
    assert not errors, f"uncaught errors in the page: {errors}"


def agent_cards(page: Page):
    return page.locator("#agents .agent")


def add_demo(page: Page, label: str) -> None:
    page.locator("#demo-picker").select_option(label=label)


def test_the_demo_room_offers_setup_in_a_banner_that_stays_dismissed_after_a_reload(make_server, tmp_path, open_page):
    demo = {"driver": "kimi", "name": "Demo Kimi", "command": str(FAKES_BIN / "kimi"), "cwd": str(tmp_path)}
    room = make_server({"demo-kimi": demo})
    page = open_page(room)

    banner = page.locator("#demo-banner")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("You are running demo agents — set up your own")
    expect(banner.get_by_role("link", name="set up your own")).to_have_attribute("href", "/setup")
    banner.get_by_role("button", name="Dismiss this notice").click()
    expect(banner).to_be_hidden()

    page.reload()
    page.wait_for_selector("body[data-ready=true]", state="attached", timeout=15_000)
    expect(banner).to_be_attached()
    expect(banner).to_be_hidden()


def test_setup_shows_the_cli_found_on_path_open_the_others_folded_and_the_assistant_off(tmp_path, browser, page_errors):
    # This machine's PATH has exactly one agent CLI, "kimi" (the fake under its real name); the
    # roster runs it and keeps a disabled codex that is not installed.
    workdir = tmp_path / "room"
    workdir.mkdir()
    server = GroupXServer(
        workdir,
        {"agents": {"kimi": {"cwd": "."}, "codex": {"cwd": ".", "enabled": False}}, "timeouts": {"closeMs": 300}},
        env={"PATH": isolated_path(tmp_path, "kimi")},
    )
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        server.start()
        page = page_errors(context.new_page())
        page.goto(server.url("/setup"))
        expect(page.locator("#setup-form")).to_be_visible(timeout=15_000)

        expect(page.locator("#drivers li.found")).to_have_count(1)
        expect(page.locator("#drivers li.found strong")).to_have_text("kimi")
        missing = page.locator("#missing-drivers")
        expect(missing).to_be_visible()
        expect(missing).not_to_have_attribute("open", "")
        expect(missing.locator("summary")).to_have_text("Other agents (not found on PATH)")
        expect(missing.locator("li.missing")).to_have_count(4)
        expect(missing.locator("li.missing").first).to_be_hidden()

        kimi = page.locator('#agents > .agent:has(legend:text-is("agent:kimi"))')
        expect(kimi).to_be_visible()
        folded = page.locator("#agents > details.agents-undetected")
        expect(folded).not_to_have_attribute("open", "")
        expect(folded.locator("summary")).to_have_text("Other agents (not found on PATH): 1")
        expect(folded.locator(".agent legend")).to_have_text("agent:codex")
        expect(folded.locator(".agent")).to_be_hidden()
        folded.locator("summary").click()
        expect(folded.locator(".agent")).to_be_visible()

        # A file without an assistant keeps it off (PROTOCOL §10.6); its card is there to turn it on.
        expect(page.locator("#assistant")).to_be_visible()
        expect(page.locator("#assistant-enabled")).not_to_be_checked()
        page.locator("#save").click()  # the folded card is saved too, and the assistant stays off
        expect(page.locator("#banner")).to_contain_text("Saved 2 agents (1 enabled)")
        written = json.loads(server.config_path.read_text())
        assert "codex" in written["agents"] and written["assistant"]["enabled"] is False
    finally:
        context.close()
        server.stop()


def test_saving_in_a_running_room_asks_for_a_restart_and_shows_the_agent_pending(room, open_page):
    page = open_page(room)
    page.goto(room.url("/setup"))
    expect(page.locator("#setup-form")).to_be_visible(timeout=15_000)
    expect(page.locator("#intro")).to_contain_text("Changes take effect after `groupx restart`")
    expect(page.locator("#room-link")).to_be_visible()
    before = agent_cards(page).count()

    add_demo(page, "Demo Hermes (hermes)")
    expect(agent_cards(page)).to_have_count(before + 1)
    expect(agent_cards(page).last.locator("legend")).to_have_text("agent:demo-hermes")
    page.locator("#save").click()

    banner = page.locator("#banner")
    expect(banner).to_contain_text(f"Saved {before + 1} agents")
    expect(banner).to_contain_text("Run `groupx restart`")
    expect(banner).to_have_class(re.compile(r"\bok\b"))
    expect(page.locator("#save")).to_be_enabled()

    page.locator("#room-link").click()
    page.wait_for_url(room.url("/"))
    page.wait_for_selector("body[data-ready=true]", state="attached", timeout=15_000)
    expect(page.locator("#demo-banner")).to_have_count(0)  # the fakes under real driver names: not the demo roster
    pending = page.locator('.agent-card--pending[data-actor-id="agent:demo-hermes"]')
    expect(pending).to_be_visible()
    expect(pending).to_have_attribute("data-status", "pending_restart")
    expect(pending.locator(".agent-status")).to_contain_text("pending restart")
    expect(pending.locator(".agent-name")).to_have_text("Demo Hermes")
    # The live agents still answer; the pending one is not a recipient.
    expect(page.locator("#recipient-chips .recipient", has_text="Demo Hermes")).to_have_count(0)
    address(page, "Kimi")
    say(page, "still here?")
    expect_final(reply(page, "agent:kimi", "echo: still here?"))

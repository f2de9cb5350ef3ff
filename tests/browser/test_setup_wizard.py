"""The Agent Settings page (/setup) in a real browser (FEATURES §2.3).

First run: ``groupx start`` with no ``groupx.json`` serves the standalone wizard; a person fills the
form in Chromium, sees a validation error next to the offending field, saves, and lands in the
room on the port they chose, where an @all message streams a reply. In a running instance, a save
asks for a restart and the room shows the new agent as pending restart. Every wait is a page
condition (Playwright's expect) or a deadline, never a sleep.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.room_page import address, bubbles, expect_final, reply, say, user_message
from tests.groupx_cli import Foreground, free_port, groupx, port_refuses
from tests.server import wait_until

WIZARD_URL = re.compile(r"http://127\.0\.0\.1:\d+/setup")


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


@pytest.fixture
def first_run(tmp_path):
    """``groupx start --no-open`` with no config file; yields the process and the wizard URL."""
    config = tmp_path / "groupx.json"
    process = Foreground(tmp_path, "start", "--config", str(config), "--no-open")
    try:
        def wizard_url():
            if not process.running():
                raise AssertionError(f"groupx exited with {process.proc.returncode}:\n{process.output()}")
            return WIZARD_URL.search(process.output())

        match = wait_until(wizard_url, timeout=30, interval=0.05, message="the wizard URL on stdout")
        yield process, match.group(0)
    finally:
        if process.running() and config.exists():
            groupx("stop", "--config", str(config), workdir=tmp_path)
        process.terminate()


def agent_cards(page: Page):
    return page.locator("#agents .agent")


def add_demo(page: Page, label: str) -> None:
    page.locator("#demo-picker").select_option(label=label)


def test_the_first_run_wizard_validates_saves_and_opens_a_working_room(tmp_path, first_run, browser, page_errors):
    process, url = first_run
    port = free_port()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = page_errors(context.new_page())
        page.goto(url)
        form = page.locator("#setup-form")
        expect(form).to_be_visible(timeout=15_000)
        expect(page.locator("#intro")).to_contain_text(f"Creating {tmp_path / 'groupx.json'}")

        # A known roster whatever CLIs this machine has: drop the starter agents, add the demo Kimi twice.
        page.locator("#server-port").fill(str(port))
        while agent_cards(page).count():
            agent_cards(page).first.locator(".remove").click()
        add_demo(page, "Demo Kimi (kimi)")
        add_demo(page, "Demo Kimi (kimi)")
        expect(agent_cards(page)).to_have_count(2)
        page.locator("#assistant-enabled").uncheck()  # no side chat: the room's agents are what is tested
        page.locator("#assistant-cwd").fill("")

        page.locator("#save").click()

        duplicate = agent_cards(page).nth(1)
        expect(page.locator("#banner")).to_have_class(re.compile(r"\berror\b"))
        expect(duplicate.locator('.field-error[data-error-for="config.agents.1.id"]')).to_have_text(
            "another agent already has the id 'demo-kimi'")
        expect(duplicate.locator('[name="id"]')).to_have_class(re.compile(r"\binvalid\b"))
        expect(duplicate.locator('[name="id"]')).to_be_focused()
        expect(agent_cards(page).first.locator('.field-error[data-error-for="config.agents.0.id"]')).to_have_text("")
        expect(page.locator("#save")).to_be_enabled()
        assert not (tmp_path / "groupx.json").exists()

        duplicate.locator(".remove").click()
        expect(agent_cards(page)).to_have_count(1)
        page.locator("#save").click()

        # The page polls /api/setup/launch and goes to the room on the chosen port.
        page.wait_for_url(f"http://127.0.0.1:{port}/", timeout=60_000)
        page.wait_for_selector("body[data-ready=true]", state="attached", timeout=30_000)
        card = page.locator('.agent-card[data-actor-id="agent:demo-kimi"]')
        expect(card).to_be_visible()
        expect(card.locator(".agent-name")).to_have_text("Demo Kimi")

        address(page, "@all")
        say(page, "hello wizard [[fake: stream n=5 delay_ms=100]]")
        message = user_message(page, "hello wizard")
        expect(message).to_have_count(1)
        bubble = bubbles(page, "agent:demo-kimi")
        expect_final(bubble, timeout=30_000)
        expect(bubble).to_have_count(1)
        expect(bubble.locator(".msg-body")).to_have_text("part-1 part-2 part-3 part-4 part-5")
        expect(message.locator('.turn-chip[data-status="completed"]')).to_have_count(1)
    finally:
        context.close()

    stopped = groupx("stop", "--config", str(tmp_path / "groupx.json"), workdir=tmp_path)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert process.wait_exit(timeout=30) == 0, process.output()
    assert port_refuses(port)


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

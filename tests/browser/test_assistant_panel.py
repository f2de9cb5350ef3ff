"""The room assistant in the browser (FEATURES §13, issue 20 item 4; docs/DECISIONS.md D49): the
wizard's assistant card, and an operator dispatch in the timeline with its targets.

Every wait is a page condition (Playwright's expect) or a deadline, never a sleep.
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.agents import fake_agents
from tests.browser.room_page import append_raw_events
from tests.server import GroupXServer

ASSISTANT = ("user:assistant", "user", "Room helper")


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    """One server for the module: the fake Kimi and Grok, answering for real."""
    workdir = tmp_path_factory.mktemp("assistant-room")
    server = GroupXServer(workdir, {"agents": fake_agents(workdir, "kimi", "grok"),
                                    "timeouts": {"handshakeMs": 600000, "closeMs": 300}})
    server.start()
    yield server
    server.stop()


def test_the_wizard_card_configures_the_assistant_and_saves_it_to_groupx_json(room, open_page):
    page = open_page(room)
    page.goto(room.url("/setup"))
    card = page.locator("#assistant")
    expect(card).to_be_visible(timeout=15_000)
    brain_dir = room.workdir / "assistant-home"
    brain_dir.mkdir()

    card.get_by_label("Enabled").check()
    card.get_by_label("Name").fill("Room helper")
    card.get_by_label("Driver").select_option("claude")
    card.get_by_label("Command", exact=True).fill("claude")
    card.get_by_label("Working directory").fill(str(brain_dir))
    card.get_by_label("Extra instructions").fill("Answer in one paragraph.")
    page.locator("#save").click()

    expect(page.locator("#banner")).to_contain_text("Saved")
    saved = json.loads(room.config_path.read_text())["assistant"]
    assert saved == {"enabled": True, "name": "Room helper", "extraInstructions": "Answer in one paragraph.",
                     "brain": {"driver": "claude", "cwd": str(brain_dir), "command": "claude"}}

    page.reload()  # the page reads the saved card back
    expect(card.get_by_label("Name")).to_have_value("Room helper")
    expect(card.get_by_label("Driver")).to_have_value("claude")
    expect(card.get_by_label("Enabled")).to_be_checked()


def test_an_enabled_assistant_without_a_working_directory_is_refused_next_to_its_card(room, open_page):
    page = open_page(room)
    page.goto(room.url("/setup"))
    card = page.locator("#assistant")
    expect(card).to_be_visible(timeout=15_000)
    before = room.config_path.read_text()

    card.get_by_label("Enabled").check()
    card.get_by_label("Working directory").fill("")
    page.locator("#save").click()

    expect(card.locator('[data-error-for="config.assistant"]')).to_contain_text("needs a working directory")
    expect(page.locator("#banner")).to_have_class("banner error")
    assert room.config_path.read_text() == before  # nothing half-written


def test_an_operator_dispatch_is_a_row_of_its_own_naming_its_targets(room, open_page):
    page = open_page(room)

    append_raw_events(room, [("operator.dispatch", {
        "content": "Please each send me a one-line status.", "operation": "worker_ask", "promptLength": 38,
        "targets": ["agent:kimi", "agent:grok"]})], actor=ASSISTANT)

    row = page.locator('#durable .dispatch[data-type="operator.dispatch"]')
    expect(row).to_be_visible(timeout=15_000)
    expect(row.locator(".dispatch-author")).to_have_text("Room helper")
    expect(row.locator(".dispatch-verb")).to_have_text("asked")
    expect(row.locator(".dispatch-target")).to_have_text(["@Kimi", "@Grok"])
    expect(row.locator(".dispatch-content")).to_have_text("Please each send me a one-line status.")
    expect(page.locator("#durable article.msg")).to_have_count(0)  # no chat bubble

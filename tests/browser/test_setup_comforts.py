"""/setup as the room is: dark when the system is (or the room's theme says so), its files the
fingerprinted ones, a Test button on every agent card, and a restart that moves the room to a
newly saved port says where the room now is. Waits are page conditions, never sleeps."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.agents import fake_agents
from tests.browser.axe import blocking_violations
from tests.groupx_cli import Foreground, write_config
from tests.server import GroupXServer, free_port


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("setup-comforts")
    server = GroupXServer(tmp, {"agents": fake_agents(tmp, "kimi"), "timeouts": {"closeMs": 300}})
    server.start()
    yield server
    server.stop()


def open_setup(browser, server, **context):
    page = browser.new_context(viewport={"width": 1280, "height": 900}, **context).new_page()
    page.goto(server.url("/setup"))
    expect(page.locator("#setup-form")).to_be_visible(timeout=15_000)
    return page


def background(page, selector):
    return page.locator(selector).first.evaluate("(el) => getComputedStyle(el).backgroundColor")


def test_setup_follows_a_dark_system_theme_and_loads_its_fingerprinted_files(room, browser):
    page = open_setup(browser, room, color_scheme="dark")
    try:
        assert background(page, "html") == "rgb(14, 17, 22)"  # the room's dark background
        assert background(page, ".card") == "rgb(22, 26, 33)"
        styles = page.locator('link[rel="stylesheet"]').evaluate_all("(links) => links.map((l) => l.href)")
        assert any(re.search(r"/static/setup_wizard/setup\.[0-9a-f]{12}\.css$", href) for href in styles), styles
        violations = blocking_violations(page)
        assert not violations, "\n".join(violations)
    finally:
        page.context.close()

    light = open_setup(browser, room, color_scheme="light")
    try:
        assert background(light, "html") == "rgb(246, 247, 249)"
        # The theme chosen in the room (theme.js) wins over the system's, as in the room.
        light.evaluate("localStorage.setItem('groupx.theme', 'dark')")
        light.reload()
        expect(light.locator("html")).to_have_attribute("data-theme", "dark")
        assert background(light, "html") == "rgb(14, 17, 22)"
    finally:
        light.context.close()


def test_an_agent_card_tests_that_agents_own_cli(room, browser):
    page = open_setup(browser, room)
    try:
        card = page.locator("#agents fieldset.agent", has=page.locator("legend", has_text="agent:kimi"))
        card.get_by_role("button", name="Test agent:kimi").click()
        result = card.get_by_role("status")
        expect(result).to_have_text("version kimi 0.0.0 (GroupX fake); handshake ok", timeout=30_000)
        expect(result).to_have_class("cli-result ok")
    finally:
        page.context.close()


def test_a_restart_onto_a_newly_saved_port_says_where_the_room_is_and_links_there(tmp_path, browser):
    old, new = free_port(), free_port()
    config = write_config(tmp_path, old)
    groupx = Foreground(tmp_path, "start", "--config", str(config), "--no-open")
    try:
        groupx.wait_ready(old)
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        page.goto(f"http://127.0.0.1:{old}/setup")
        expect(page.locator("#setup-form")).to_be_visible(timeout=15_000)
        page.get_by_label("Port").fill(str(new))
        page.locator("#save").click()
        expect(page.locator("#banner")).to_contain_text("Saved 1 agent")

        page.get_by_role("button", name="Restart GroupX now").click()
        banner = page.locator("#banner")
        expect(banner).to_contain_text(f"GroupX is starting again on port {new}", timeout=90_000)
        link = banner.get_by_role("link", name="Open the room there")
        expect(link).to_have_attribute("href", f"http://127.0.0.1:{new}/")
        expect(link).to_be_focused()

        groupx.wait_ready(new)
        link.click()
        page.wait_for_selector("body[data-ready=true]", state="attached", timeout=15_000)
        assert page.url == f"http://127.0.0.1:{new}/"
        page.context.close()
    finally:
        groupx.terminate()

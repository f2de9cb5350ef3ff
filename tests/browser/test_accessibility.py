"""axe-core (pinned, tests/browser/vendor) finds no critical or serious violation on the room,
light and dark, desktop and phone, with the assistant panel open; on /setup; on the admin login."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from setup_wizard.starter import demo_agents
from tests.assistant_room import assistant_room, say
from tests.browser.axe import blocking_violations

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}


def open_in(browser, server, path, *, viewport, scheme):
    context = browser.new_context(viewport=viewport, color_scheme=scheme)
    page = context.new_page()
    page.goto(server.url(path))
    return context, page


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    """Three agents with a conversation in the timeline and in the assistant's side chat."""
    server = assistant_room(
        tmp_path_factory.mktemp("axe"), "kimi", "hermes", "grok", timeouts={"handshakeMs": 600000, "closeMs": 300}
    )
    server.post("/api/messages", {"clientCommandId": "axe-1", "to": ["@all"], "content": "hello **all**"})
    say(server, "hello assistant")
    yield server
    server.stop()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_room_has_no_serious_accessibility_violation(room, browser, scheme, viewport):
    context, page = open_in(browser, room, "/", viewport=viewport, scheme=scheme)
    try:
        page.wait_for_selector("body[data-ready=true]", state="attached", timeout=15_000)
        expect(page.locator("article.msg--turn")).to_have_count(3, timeout=30_000)
        expect(page.locator("h1")).to_have_count(1)
        panel = page.locator("#assistant-panel")
        if panel.is_visible():  # open by default on a wide screen: look at the room without it too
            page.locator("#assistant-toggle").click()
            expect(panel).to_be_hidden()
        violations = blocking_violations(page)
        assert not violations, "\n".join(violations)

        page.locator("#assistant-toggle").click()
        expect(panel).to_be_visible()
        expect(panel.locator(".assistant-msg")).not_to_have_count(0)
        violations = blocking_violations(page)
        assert not violations, "\n".join(violations)
    finally:
        context.close()


@pytest.mark.parametrize("path", ["/setup", "/admin/login/"])
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_setup_and_the_admin_login_have_no_serious_accessibility_violation(
    make_server, tmp_path, browser, path, viewport
):
    server = make_server(demo_agents(tmp_path))
    context, page = open_in(browser, server, path, viewport=viewport, scheme="light")
    try:
        expect(page.locator("h1")).to_have_count(1)
        if path == "/setup":
            expect(page.locator("#setup-form")).to_be_visible()
        violations = blocking_violations(page)
        assert not violations, "\n".join(violations)
    finally:
        context.close()

"""The room on a phone (360–430 px wide): nothing wider than the screen, a composer of about 100 px
with the recipients behind one "To: …" control, one menu for Search, Export, Settings, Admin and
API docs, and touch targets of at least 24 px."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.agents import fake_agents
from tests.assistant_room import assistant_room
from tests.browser.room_page import user_message

NO_OVERFLOW = "() => document.documentElement.scrollWidth <= window.innerWidth"
SMALL_TARGETS = """() => [...document.querySelectorAll('button, a[href], summary, input, select, textarea, [tabindex="0"]')]
  .filter((el) => el.offsetParent !== null && !el.closest('.visually-hidden, .msg-body, .mention-list'))
  .map((el) => [el, el.getBoundingClientRect()])
  .filter(([el, r]) => r.width > 0 && (r.width < 24 || r.height < 24))
  .map(([el, r]) => `${el.tagName.toLowerCase()}#${el.id}.${el.className} ${Math.round(r.width)}x${Math.round(r.height)}`)"""


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    server = assistant_room(
        tmp_path_factory.mktemp("phone"), "kimi", "hermes", "grok", timeouts={"handshakeMs": 600000, "closeMs": 300}
    )
    yield server
    server.stop()


@pytest.mark.parametrize("width", [360, 390, 430])
def test_the_room_fits_a_phone_and_its_composer_is_small(room, open_page, width):
    page = open_page(room, width=width, height=800)
    assert page.evaluate(NO_OVERFLOW)
    height = page.locator("#composer").bounding_box()["height"]
    assert height <= 112, height
    assert page.evaluate(SMALL_TARGETS) == []

    to = page.locator("#to-toggle")
    expect(to).to_have_text("To: all 3")
    expect(page.locator("#recipient-chips")).to_be_hidden()
    to.click()
    expect(to).to_have_attribute("aria-expanded", "true")
    page.locator("#recipient-chips").get_by_role("button", name="@Kimi", exact=True).click()
    expect(to).to_have_text("To: Kimi")
    box = page.get_by_label("Message", exact=True)
    box.fill(f"from a phone {width} px wide")
    box.press("Enter")
    expect(user_message(page, f"from a phone {width} px wide")).to_have_count(1)
    assert page.evaluate(NO_OVERFLOW)

    page.locator("#assistant-toggle").click()
    sheet = page.locator("#assistant-panel")
    expect(sheet).to_be_visible()
    assert sheet.bounding_box()["width"] <= width
    assert page.evaluate(NO_OVERFLOW)


def test_the_phone_menu_reaches_search_export_settings_admin_and_api_docs(room, open_page):
    page = open_page(room, width=390, height=844)
    menu = page.locator("#more-menu")
    menu.locator("summary").click()
    items = menu.locator(".more-item")
    expect(items).to_have_count(5)
    for name in ("Search messages", "Export the room (Markdown)", "Agent settings", "Admin", "API docs"):
        expect(menu.get_by_text(name, exact=False).first).to_be_visible()
    assert page.evaluate(NO_OVERFLOW)
    menu.get_by_role("button", name="Search messages").click()
    expect(page.locator("#search-input")).to_be_focused()
    expect(menu.locator(".more-panel")).to_be_hidden()

    menu.locator("summary").focus()
    page.keyboard.press("Enter")
    expect(menu.locator(".more-panel")).to_be_visible()
    page.keyboard.press("Escape")
    expect(menu.locator(".more-panel")).to_be_hidden()


def test_the_phone_agent_strip_scrolls_from_the_keyboard(make_server, tmp_path, open_page):
    server = make_server(fake_agents(tmp_path, "kimi", "hermes", "grok", "claude", "codex"))
    page = open_page(server, width=360, height=740)
    strip = page.locator("#sidebar")
    expect(page.locator(".agent-card")).to_have_count(5)
    assert strip.evaluate("el => el.scrollWidth > el.clientWidth")  # five cards are wider than 360 px
    page.locator("#theme-toggle").focus()
    for _ in range(10):  # the strip comes a few Tab stops after the top bar
        page.keyboard.press("Tab")
        if strip.evaluate("el => el === document.activeElement"):
            break
    expect(strip).to_be_focused()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => document.getElementById('sidebar').scrollLeft > 0")


@pytest.mark.parametrize("path", ["/setup", "/admin/login/"])
def test_setup_and_the_admin_login_fit_a_phone(room, browser, path):
    context = browser.new_context(viewport={"width": 360, "height": 740})
    try:
        page = context.new_page()
        page.goto(room.url(path))
        expect(page.locator("h1")).to_be_visible()
        assert page.evaluate(NO_OVERFLOW)
    finally:
        context.close()

"""Phone and desktop layouts, the theme toggle and keyboard use of the room page."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.room_page import expect_final, reply


def test_a_phone_width_folds_the_agent_column_into_a_strip_that_opens(room, open_page):
    page = open_page(room, width=390, height=844)

    toggle = page.get_by_role("button", name="Show agents")
    expect(toggle).to_be_visible()
    expect(page.locator(".sidebar-note")).to_be_hidden()
    expect(page.locator(".agent-card")).to_have_count(3)
    expect(page.locator('.agent-card[data-actor-id="agent:kimi"] .agent-meta')).to_be_hidden()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing overflows sideways

    toggle.click()

    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(page.locator('.agent-card[data-actor-id="agent:kimi"] .agent-meta')).to_be_visible()


def test_the_theme_toggle_switches_and_is_remembered(room, open_page):
    page = open_page(room)
    html = page.locator("html")
    start = page.evaluate("getComputedStyle(document.body).backgroundColor")

    page.locator("#theme-toggle").click()
    chosen = html.get_attribute("data-theme")
    assert chosen in ("light", "dark")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") != start

    page.reload()
    page.wait_for_selector("body[data-ready=true]", state="attached")
    expect(html).to_have_attribute("data-theme", chosen)


def test_a_message_can_be_written_and_sent_with_the_keyboard_only(room, open_page):
    page = open_page(room)
    page.get_by_role("button", name="@all").focus()
    page.keyboard.press("Enter")  # @all off: nobody is addressed
    page.keyboard.press("Tab")  # → @Kimi (chips are in roster order)
    expect(page.get_by_role("button", name="@Kimi")).to_be_focused()
    page.keyboard.press("Space")
    expect(page.get_by_role("button", name="@Kimi")).to_have_attribute("aria-pressed", "true")

    page.get_by_label("Message", exact=True).focus()
    page.keyboard.type("line one")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("line two")
    page.keyboard.press("Enter")

    expect_final(reply(page, "agent:kimi", "echo: line one"))
    # Shift+Enter is a line break on screen (a <br> in the rendered Markdown), as typed.
    expect(page.locator("article.msg--user .msg-body")).to_have_text("line one\nline two", use_inner_text=True)

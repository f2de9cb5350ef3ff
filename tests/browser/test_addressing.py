"""Addressing as people expect (FEATURES §1, §22): from @all a chip means that agent alone,
Shift/Ctrl adds or removes, the Send button names who gets the message, and a typed "@Name" of
an agent who is not addressed is warned about before anything is sent; text never routes."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.room_page import user_message


def chip(page, label):
    return page.locator("#recipient-chips").get_by_role("button", name=label, exact=True)


def pressed(page) -> list[str]:
    return page.locator("#recipient-chips .recipient[aria-pressed=true]").all_inner_texts()


def turn_targets(message) -> list[str]:
    return sorted(message.locator(".turn-chip").evaluate_all("els => els.map(e => e.dataset.agent)"))


def test_from_all_a_click_on_a_chip_addresses_that_agent_alone_and_shift_click_adds_another(room, open_page):
    page = open_page(room)
    send = page.locator("#send")
    box = page.get_by_label("Message", exact=True)
    expect(send).to_have_text("Send to all 3")
    expect(box).to_have_attribute("placeholder", "Message all 3…")

    chip(page, "@Kimi").click()
    assert pressed(page) == ["@Kimi"]
    expect(send).to_have_text("Send to Kimi")
    expect(box).to_have_attribute("placeholder", "Message Kimi…")

    chip(page, "@Grok").click(modifiers=["Shift"])
    expect(send).to_have_text("Send to Kimi and Grok")
    chip(page, "@Kimi").click(modifiers=["Control"])
    expect(send).to_have_text("Send to Grok")

    chip(page, "@all").click()
    chip(page, "@all").click()  # off: nobody, then a chip adds one
    expect(send).to_have_text("Send")
    chip(page, "@Hermes").click()
    expect(send).to_have_text("Send to Hermes")


def test_the_keyboard_picks_one_agent_and_shift_enter_adds_another(room, open_page):
    page = open_page(room)
    chip(page, "@Kimi").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#send")).to_have_text("Send to Kimi")
    page.keyboard.press("Tab")
    expect(chip(page, "@Hermes")).to_be_focused()
    page.keyboard.press("Shift+Enter")
    expect(page.locator("#send")).to_have_text("Send to Kimi and Hermes")
    page.keyboard.press("Shift+Space")
    expect(page.locator("#send")).to_have_text("Send to Kimi")


def test_a_typed_name_of_an_agent_not_addressed_is_warned_about_and_can_be_added(room, open_page):
    page = open_page(room)
    box = page.get_by_label("Message", exact=True)
    chip(page, "@Kimi").click()
    box.fill("@Grok what do you think?")
    box.press("Enter")

    warning = page.locator("#mention-warning")
    expect(warning).to_be_visible()
    expect(warning).to_contain_text("@Grok is mentioned but not addressed")
    expect(user_message(page, "what do you think")).to_have_count(0)  # nothing was sent

    warning.get_by_role("button", name="Add Grok").click()
    expect(warning).to_be_hidden()
    expect(page.locator("#send")).to_have_text("Send to Kimi and Grok")
    expect(box).to_be_focused()
    box.press("Enter")
    message = user_message(page, "what do you think")
    expect(message.locator(".turn-chip")).to_have_count(2)
    assert turn_targets(message) == ["agent:grok", "agent:kimi"]


def test_a_warned_message_can_still_go_only_to_whom_it_is_addressed(room, open_page):
    page = open_page(room)
    box = page.get_by_label("Message", exact=True)
    chip(page, "@Hermes").click()
    box.fill("ask @kimi later, not now")  # names match whatever the case
    box.press("Enter")
    page.locator("#mention-warning").get_by_role("button", name="Send without them").click()

    message = user_message(page, "ask @kimi later")
    expect(message.locator(".turn-chip")).to_have_count(1)
    assert turn_targets(message) == ["agent:hermes"]
    expect(page.locator("#mention-warning")).to_be_hidden()

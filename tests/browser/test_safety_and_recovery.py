"""The room page never runs what a message says, and survives the server going away."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.agents import send
from tests.browser.room_page import address, expect_final, message_ids, reply, say, user_message
from tests.server import wait_until


def test_html_in_a_message_is_shown_as_text_and_runs_nothing(room, open_page):
    page = open_page(room)
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    address(page, "Kimi")
    text = "look <img src=x onerror=alert(1)> and <script>alert(2)</script>"

    say(page, text)

    expect(user_message(page, "look").locator(".msg-body")).to_have_text(text)
    answer = reply(page, "agent:kimi", "echo: look")
    expect_final(answer)
    expect(answer.locator(".msg-body")).to_have_text(f"echo: {text}")
    expect(page.locator("#timeline img, #timeline script")).to_have_count(0)
    assert dialogs == []
    page.evaluate("window.alert('probe')")  # the listener itself works
    assert dialogs == ["probe"]


def test_links_and_code_fences_are_built_as_elements_not_parsed_html(room, open_page):
    page = open_page(room)
    address(page, "Kimi")

    say(page, "see https://example.com/a?b=1.\n```\n<b>not bold</b>\n```")

    message = user_message(page, "see")
    link = message.locator("a")
    expect(link).to_have_attribute("href", "https://example.com/a?b=1")
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    expect(message.locator("pre code")).to_have_text("<b>not bold</b>")
    expect(page.locator("#timeline b")).to_have_count(0)


def test_a_network_drop_is_recovered_with_no_lost_and_no_doubled_message(room, open_page):
    page = open_page(room)
    address(page, "Kimi")
    say(page, "before the drop")
    expect_final(reply(page, "agent:kimi", "echo: before the drop"))
    connection = page.locator("#connection")
    expect(connection).to_have_attribute("data-state", "live")

    room.stop()
    expect(connection).to_have_attribute("data-state", re.compile("reconnecting|offline"))
    room.start(port=room.port)
    send(room, "agent:kimi", "while the page was away")  # committed before the page is back

    expect(connection).to_have_attribute("data-state", "live", timeout=30_000)
    expect_final(reply(page, "agent:kimi", "echo: while the page was away"), timeout=30_000)
    say(page, "after the drop")
    expect_final(reply(page, "agent:kimi", "echo: after the drop"))

    stored = [e["eventId"] for e in room.events() if e["type"] == "message.created"]
    wait_until(lambda: message_ids(page) == stored, timeout=10, message="the page to show every message once")
    assert len(stored) == 6 and len(set(stored)) == 6
    for text in ("before the drop", "while the page was away", "after the drop"):
        expect(user_message(page, text)).to_have_count(1)
        expect(reply(page, "agent:kimi", f"echo: {text}")).to_have_count(1)

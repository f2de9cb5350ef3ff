"""Small things people expect of a chat page: avatars that tell agents apart, an @
picker in the composer, a title that counts replies while the tab is hidden, an opt-in
notification when a Turn ends, and links to the admin and the API docs."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from setup_wizard.starter import demo_agents
from tests.agents import fake_agents, send
from tests.browser.room_page import expect_final, reply, user_message
from tests.server import wait_until

TITLE = "GroupX · room:main"

# The page cannot be hidden for real in a headless browser, so the test sets what a hidden tab
# reports (document.hidden, visibilityState) and fires the event the browser would fire.
SET_VISIBILITY = """hidden => {
  Object.defineProperty(document, "hidden", { configurable: true, get: () => hidden });
  Object.defineProperty(document, "visibilityState", { configurable: true, get: () => (hidden ? "hidden" : "visible") });
  document.dispatchEvent(new Event("visibilitychange"));
}"""

# Headless Chromium shows no notification anyone could read, so every one the page creates is
# also written down (the real constructor still runs).
RECORD_NOTIFICATIONS = """(() => {
  const Real = window.Notification;
  window.__notifications = [];
  window.Notification = class extends Real {
    constructor(title, options) {
      super(title, options);
      window.__notifications.push({ title, body: options && options.body });
    }
  };
})();"""


def message_box(page: Page):
    return page.get_by_label("Message", exact=True)


def picker(page: Page):
    return page.get_by_role("listbox", name="Address someone")


def chip(page: Page, label: str):
    return page.locator("#recipient-chips").get_by_role("button", name=label, exact=True)


def test_the_five_demo_agents_have_distinct_initials_and_colours(make_server, tmp_path, open_page):
    server = make_server(demo_agents(tmp_path))
    page = open_page(server)

    cards = page.locator(".agent-card")
    expect(cards).to_have_count(5)
    avatars = {card.get_attribute("data-actor-id"): card.locator(".avatar") for card in cards.all()}
    expected = {
        "agent:demo-claude": "CL",
        "agent:demo-codex": "CO",
        "agent:demo-grok": "GR",
        "agent:demo-hermes": "HE",
        "agent:demo-kimi": "KI",
    }
    assert {actor: avatar.inner_text() for actor, avatar in avatars.items()} == expected
    colours = {avatar.evaluate("el => getComputedStyle(el).color") for avatar in avatars.values()}
    backgrounds = {avatar.evaluate("el => getComputedStyle(el).backgroundColor") for avatar in avatars.values()}
    assert len(colours) == 5 and len(backgrounds) == 5

    # A reply carries the same avatar as the agent's card.
    chip(page, "@all").click()
    chip(page, "@Demo Kimi").click()
    message_box(page).fill("who are you?")
    message_box(page).press("Enter")
    answer = reply(page, "agent:demo-kimi", "echo: who are you?")
    expect_final(answer)
    expect(answer.locator(".avatar")).to_have_text("KI")
    assert answer.locator(".avatar").evaluate("el => getComputedStyle(el).color") == avatars[
        "agent:demo-kimi"
    ].evaluate("el => getComputedStyle(el).color")


def test_agents_whose_names_start_alike_still_get_distinct_initials_and_colours(make_server, tmp_path, open_page):
    agents = fake_agents(tmp_path, "kimi", "hermes")
    agents["kimi"]["name"] = "Kimi"
    agents["hermes"] |= {"driver": "hermes", "name": "Kimberly"}  # "KI" too, and no known colour
    server = make_server(agents)
    page = open_page(server)

    avatars = page.locator(".agent-card .avatar")
    expect(avatars).to_have_text(["KI", "KM"])  # the agent listed first keeps its natural initials
    colours = avatars.evaluate_all("els => els.map(el => getComputedStyle(el).backgroundColor)")
    assert len(set(colours)) == 2


def test_typing_at_opens_the_agent_picker_and_a_click_addresses_that_agent(room, open_page):
    page = open_page(room)
    box = message_box(page)
    expect(chip(page, "@all")).to_have_attribute("aria-pressed", "true")

    box.press_sequentially("@")
    expect(picker(page).locator(".mention-name")).to_have_text(["@all", "Kimi", "Hermes", "Grok"])  # the chips' order
    expect(picker(page)).to_be_visible()  # a textarea takes no aria-expanded: the list itself shows (axe)
    box.press_sequentially("he")
    expect(picker(page).locator(".mention-name")).to_have_text(["Hermes"])
    picker(page).get_by_role("option", name="Hermes").click()

    expect(picker(page)).to_be_hidden()
    expect(box).to_have_value("@Hermes ")
    expect(box).to_be_focused()
    expect(chip(page, "@Hermes")).to_have_attribute("aria-pressed", "true")
    expect(chip(page, "@all")).to_have_attribute("aria-pressed", "false")
    expect(chip(page, "@Kimi")).to_have_attribute("aria-pressed", "false")

    box.press_sequentially("please look")
    box.press("Enter")
    message = user_message(page, "please look")
    expect(message.locator(".turn-chip")).to_have_count(1)
    expect(message.locator(".turn-chip")).to_have_attribute("data-agent", "agent:hermes")


def test_the_agent_picker_works_from_the_keyboard_alone(room, open_page):
    page = open_page(room)
    box = message_box(page)
    box.focus()

    box.press_sequentially("@")
    options = picker(page).get_by_role("option")
    expect(options.nth(0)).to_have_attribute("aria-selected", "true")
    box.press("ArrowDown")
    box.press("ArrowDown")
    expect(options.nth(2)).to_have_attribute("aria-selected", "true")
    expect(box).to_have_attribute("aria-activedescendant", options.nth(2).get_attribute("id"))
    box.press("ArrowUp")
    box.press("ArrowUp")
    box.press("ArrowUp")  # from the first option, up wraps round to the last
    expect(options.nth(3)).to_have_attribute("aria-selected", "true")
    box.press("Enter")  # picks Grok, and sends nothing
    expect(box).to_have_value("@Grok ")
    expect(chip(page, "@Grok")).to_have_attribute("aria-pressed", "true")
    expect(chip(page, "@all")).to_have_attribute("aria-pressed", "false")

    box.press_sequentially("and @ki")
    box.press("Tab")
    expect(box).to_have_value("@Grok and @Kimi ")
    expect(box).to_be_focused()  # Tab picked; it did not move focus
    expect(chip(page, "@Grok")).to_have_attribute("aria-pressed", "true")
    expect(chip(page, "@Kimi")).to_have_attribute("aria-pressed", "true")

    box.press_sequentially("not @h")
    expect(picker(page)).to_be_visible()
    box.press("Escape")
    expect(picker(page)).to_be_hidden()
    box.press_sequentially("e")  # the closed "@" stays closed while it is being typed
    expect(picker(page)).to_be_hidden()
    expect(chip(page, "@Hermes")).to_have_attribute("aria-pressed", "false")

    box.press("Enter")  # with the picker closed, Enter sends as always
    message = user_message(page, "@Grok and @Kimi not @he")
    expect(message.locator(".turn-chip")).to_have_count(2)
    assert sorted(message.locator(".turn-chip").evaluate_all("els => els.map(e => e.dataset.agent)")) == [
        "agent:grok",
        "agent:kimi",
    ]


def test_while_the_tab_is_hidden_the_title_counts_new_replies_until_it_is_seen(room, open_page):
    page = open_page(room)
    expect(page).to_have_title(TITLE)

    page.evaluate(SET_VISIBILITY, True)
    send(room, ["agent:kimi", "agent:hermes"], "anyone there?")

    expect(page).to_have_title(f"(2) {TITLE}")
    expect(reply(page, "agent:hermes", "echo: anyone there?")).to_have_count(1)
    page.evaluate(SET_VISIBILITY, False)
    expect(page).to_have_title(TITLE)

    send(room, "agent:grok", "and now?")  # seen as it arrives: nothing to count
    expect_final(reply(page, "agent:grok", "echo: and now?"))
    expect(page).to_have_title(TITLE)


def test_an_opted_in_notification_says_when_a_turn_finishes_or_fails(room, open_page):
    page = open_page(room)
    page.context.grant_permissions(["notifications"], origin=room.url(""))
    page.add_init_script(RECORD_NOTIFICATIONS)
    page.reload()
    page.wait_for_selector("body[data-ready=true]", state="attached")
    bell = page.get_by_role("button", name="Notify me when a Turn ends")
    expect(bell).to_have_attribute("aria-pressed", "false")

    page.evaluate(SET_VISIBILITY, True)
    send(room, "agent:kimi", "before opting in")
    expect_final(reply(page, "agent:kimi", "echo: before opting in"))
    bell.click()
    expect(page.get_by_role("button", name="Stop notifications when a Turn ends")).to_have_attribute(
        "aria-pressed", "true"
    )
    send(room, "agent:kimi", "all good")
    send(room, "agent:hermes", "break [[fake: fail message=boom]]")

    notes = wait_until(
        lambda: (found := page.evaluate("window.__notifications")) and len(found) >= 2 and found,
        timeout=30,
        message="two notifications",
    )
    assert sorted(note["title"] for note in notes) == ["Hermes's Turn failed", "Kimi finished"]
    assert all(re.search(r"\S", note["body"]) for note in notes)

    page.reload()  # the choice is remembered
    page.wait_for_selector("body[data-ready=true]", state="attached")
    expect(page.locator("#notify-toggle")).to_have_attribute("aria-pressed", "true")


def test_the_header_links_to_the_admin_and_to_api_docs_that_render_under_the_csp(room, open_page):
    page = open_page(room)

    admin = page.get_by_role("link", name="Admin")
    docs = page.get_by_role("link", name="API docs")

    expect(admin).to_have_attribute("href", "/admin/")
    expect(docs).to_have_attribute("href", "/api/docs")
    for link in (admin, docs):
        expect(link).to_be_visible()
        expect(link).to_have_attribute("target", "_blank")
        expect(link).to_have_attribute("rel", "noopener")

    refused = []
    page.context.on(
        "console", lambda message: "Content Security Policy" in message.text and refused.append(message.text)
    )
    with page.context.expect_page() as opened:
        docs.click()
    api_docs = opened.value
    # Swagger UI comes from the project's own static files (no CDN), so the operations appear.
    expect(api_docs.locator(".opblock").first).to_be_visible()
    expect(api_docs.locator(".opblock-summary-path", has_text="/api/messages").first).to_be_visible()
    assert refused == []

    with page.context.expect_page() as opened:
        admin.click()
    expect(opened.value).to_have_title(re.compile("Log in"))

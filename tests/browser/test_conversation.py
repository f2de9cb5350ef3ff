"""The room page in a real browser: sending, streaming, refreshing, tools, cancel.

Each test runs its own server with the fake Kimi, Hermes and Grok CLIs and drives the page as a
person would; every wait is on a page condition (Playwright's expect), never a sleep.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.agents import wait_terminal
from tests.browser.room_page import (
    AGENTS,
    address,
    bubbles,
    expect_final,
    message_ids,
    reply,
    say,
    user_message,
)
from tests.server import wait_until

LIVE = re.compile(r"\bis-live\b")


def parts(n: int) -> str:
    return " ".join(f"part-{i}" for i in range(1, n + 1))


def test_sending_to_all_streams_every_answer_and_completes(room, open_page):
    page = open_page(room)

    say(page, "hello everyone [[fake: stream n=10 delay_ms=200]]")

    message = user_message(page, "hello everyone")
    expect(message).to_have_count(1)
    expect(message.locator(".turn-chip")).to_have_count(3)
    # While the agents stream: live bubbles with partial text, and busy cards in the sidebar.
    expect(page.locator("article.msg--turn.is-live .stream-text", has_text="part-2").first).to_be_visible()
    expect(page.locator('.agent-card[data-busy="true"]').first).to_be_visible()
    for agent in AGENTS:
        expect_final(bubbles(page, agent))
        expect(bubbles(page, agent)).to_have_count(1)
        expect(bubbles(page, agent).locator(".msg-body")).to_have_text(parts(10))
    expect(message.locator('.turn-chip[data-status="completed"]')).to_have_count(3)
    expect(page.locator('.agent-card[data-busy="true"]')).to_have_count(0)
    # Every message the server stored is on the page once: the prompt, then its replies under it
    # (in the order their Turns started, live and after a refresh alike).
    stored = [e["eventId"] for e in room.events() if e["type"] == "message.created"]
    assert message_ids(page)[0] == stored[0] and sorted(message_ids(page)) == sorted(stored) and len(stored) == 4
    expect(page.locator(f'.thread[data-thread-of="{stored[0]}"] article.msg--turn')).to_have_count(3)


def test_a_refresh_mid_stream_shows_the_history_and_the_live_turn_completes(room, open_page):
    page = open_page(room)
    address(page, "Kimi")
    say(page, "first question")
    expect_final(reply(page, "agent:kimi", "echo: first question"))

    say(page, "now a slow one [[fake: stream n=25 delay_ms=200]]")
    live = page.locator('article.msg--turn.is-live[data-actor-id="agent:kimi"]')
    expect(live.locator(".stream-text")).to_contain_text("part-3")
    turn_id = live.get_attribute("data-turn-id")

    page.reload()
    page.wait_for_selector("body[data-ready=true]", state="attached")

    expect(user_message(page, "first question")).to_have_count(1)
    expect(reply(page, "agent:kimi", "echo: first question")).to_have_count(1)
    expect(user_message(page, "now a slow one")).to_have_count(1)
    bubble = page.locator(f'article[data-turn-id="{turn_id}"]')
    expect(bubble).to_have_class(LIVE)  # restored from bootstrap's activeTurns
    expect(bubble.locator(".stream-text")).to_contain_text(re.compile(r"part-\d+"))  # deltas keep coming
    expect_final(bubble)
    expect(bubble.locator(".msg-body")).to_have_text(parts(25))
    expect(page.locator(f'article[data-turn-id="{turn_id}"]')).to_have_count(1)
    expect(page.locator(f'.turn-chip[data-turn-id="{turn_id}"]')).to_have_attribute("data-status", "completed")


def test_tool_progress_is_folded_into_the_agent_bubble_one_line_per_call(room, open_page):
    page = open_page(room)
    address(page, "Kimi")

    say(page, "look around [[fake: reason n=2; tool delay_ms=700; tool name=read_file status=failed; stream n=3]]")

    bubble = bubbles(page, "agent:kimi")
    expect(bubble.locator('.tool[data-status="running"]')).to_have_count(1)  # live, while the shell runs
    expect(bubble).to_have_class(LIVE)
    expect_final(bubble)

    def check_folded():
        tools = bubble.locator(".tool")
        expect(tools).to_have_count(2)
        expect(tools.nth(0)).to_have_attribute("data-status", "done")
        expect(tools.nth(0).locator(".tool-name")).to_have_text("shell: echo fake-tool")
        expect(tools.nth(1)).to_have_attribute("data-status", "failed")
        expect(tools.nth(1).locator(".tool-name")).to_have_text("read_file: echo fake-tool")
        reasoning = bubble.locator("details.reasoning")
        expect(reasoning).to_have_js_property("open", False)  # collapsed until asked
        expect(reasoning.locator(".reasoning-text")).to_be_hidden()
        expect(page.locator("#timeline .tool")).to_have_count(2)  # nowhere else, no raw JSON cards
        return [tools.nth(i).get_attribute("data-tool-call-id") for i in range(2)]

    live_ids = check_folded()
    bubble.locator(".tool").nth(0).locator("summary").click()
    expect(bubble.locator(".tool").nth(0).locator(".tool-details")).to_contain_text("kind")
    bubble.locator("details.reasoning summary").click()
    expect(bubble.locator(".reasoning-text")).to_have_text("thinking-1 thinking-2")

    page.reload()
    page.wait_for_selector("body[data-ready=true]", state="attached")
    bubble = bubbles(page, "agent:kimi")
    expect_final(bubble)
    assert check_folded() == live_ids  # tool.progress.recorded merged under the same keys


def test_a_running_turn_is_cancelled_from_its_chip(room, open_page):
    page = open_page(room)
    address(page, "Kimi")

    say(page, "take your time [[fake: hang]]")

    chip = user_message(page, "take your time").locator('.turn-chip[data-agent="agent:kimi"]')
    expect(chip).to_have_attribute("data-status", "running")
    expect(page.locator('.agent-card[data-actor-id="agent:kimi"]')).to_have_attribute("data-busy", "true")
    chip.get_by_role("button", name="Cancel Kimi's Turn").click()

    expect(chip).to_have_attribute("data-status", "cancelled")
    expect(chip.get_by_role("button")).to_be_hidden()
    bubble = bubbles(page, "agent:kimi")
    expect(bubble).to_have_attribute("data-status", "cancelled")  # the partial text stays, marked
    expect(bubble).not_to_have_class(LIVE)
    expect(page.locator('.agent-card[data-actor-id="agent:kimi"]')).to_have_attribute("data-busy", "false")
    turn_id = chip.get_attribute("data-turn-id")
    assert wait_terminal(room, turn_id)["type"] == "turn.cancelled"


def test_replying_quotes_the_original_author_and_text(room, open_page):
    page = open_page(room)
    address(page, "Kimi")
    say(page, "what is 6 x 7?")
    answer = reply(page, "agent:kimi", "echo: what is 6 x 7?")
    expect_final(answer)

    answer.hover()
    answer.get_by_role("button", name="Reply to Kimi").click()
    expect(page.locator("#context-bar")).to_contain_text("Kimi")
    say(page, "thanks")

    followup = user_message(page, "thanks")
    quote = followup.locator(".ref--reply")
    expect(quote.locator(".ref-author")).to_have_text("Kimi")
    expect(quote.locator(".ref-text")).to_have_text("echo: what is 6 x 7?")
    expect(page.locator("#context-bar")).to_be_hidden()
    stored = wait_until(lambda: [e for e in room.events() if e["body"].get("content") == "thanks"])
    assert stored[0]["replyToEventId"] == answer.get_attribute("data-event-id")


def test_a_failed_send_is_retried_with_the_same_client_command_id(room, open_page):
    page = open_page(room)
    address(page, "Kimi")
    sent = []

    def lose_the_first_answer(route):
        sent.append(route.request.post_data_json)
        if len(sent) == 1:
            route.fetch()  # the server accepts it…
            route.abort()  # …but the browser never hears back
        else:
            route.continue_()

    page.route("**/api/messages", lose_the_first_answer)
    say(page, "only once please")

    error = page.locator("#composer-error")
    expect(error.locator(".error-code")).to_have_text("NETWORK_ERROR")
    error.get_by_role("button", name="Retry").click()

    expect(error).to_be_hidden()
    expect_final(reply(page, "agent:kimi", "echo: only once please"))
    expect(user_message(page, "only once please")).to_have_count(1)
    assert len(sent) == 2 and sent[0]["clientCommandId"] == sent[1]["clientCommandId"]
    assert len([e for e in room.events() if e["body"].get("content") == "only once please"]) == 1
    expect(page.get_by_label("Message", exact=True)).to_have_value("")

    say(page, "a new one")  # a new message gets a new id
    expect(user_message(page, "a new one")).to_have_count(1)
    assert sent[2]["clientCommandId"] != sent[0]["clientCommandId"]


def test_the_draft_and_the_recipients_survive_a_reload(room, open_page):
    page = open_page(room)
    address(page, "Hermes")
    page.get_by_label("Message", exact=True).fill("half a thought\nsecond line")
    expect(page.locator("#char-count")).to_have_text("26 / 131,072")

    page.reload()
    page.wait_for_selector("body[data-ready=true]", state="attached")

    expect(page.get_by_label("Message", exact=True)).to_have_value("half a thought\nsecond line")
    expect(page.get_by_role("button", name="@Hermes")).to_have_attribute("aria-pressed", "true")
    expect(page.get_by_role("button", name="@all")).to_have_attribute("aria-pressed", "false")

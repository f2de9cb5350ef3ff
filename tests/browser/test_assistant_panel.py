"""The room assistant in the browser (FEATURES §13; docs/DECISIONS.md D49): its
side chat beside the timeline (a bottom sheet on a phone), its operator dispatches in the timeline,
and the wizard's assistant card. The brain is the fake Claude CLI over its real wire, connected to
the real /mcp/operator; nothing of GroupX is mocked.

Every wait is a page condition (Playwright's expect) or a deadline, never a sleep.
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from tests.assistant_room import assistant_room
from tests.server import wait_until


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    """One room for the module: the fake Kimi and Grok, and an assistant whose brain is ready."""
    server = assistant_room(
        tmp_path_factory.mktemp("assistant-ui"), "kimi", "grok", timeouts={"handshakeMs": 600000, "closeMs": 300}
    )
    yield server
    server.stop()


def panel(page: Page):
    return page.locator("#assistant-panel")


def ask(page: Page, text: str) -> None:
    box = page.get_by_label("Message to the assistant")
    box.fill(text)
    box.press("Enter")


def side_row(page: Page, role: str, text: str):
    return panel(page).locator(f".assistant-msg--{role}[data-state=stored]", has_text=text)


def test_a_message_to_the_assistant_is_answered_in_the_side_chat_and_never_posted_to_the_room(room, open_page):
    page = open_page(room)
    expect(panel(page)).to_be_visible()  # open by default on a wide screen when the assistant is on
    expect(page.locator("#assistant-toggle")).to_have_attribute("aria-expanded", "true")
    expect(page.locator("#assistant-status")).to_have_text("ready")
    expect(page.locator("#assistant-title")).to_have_text("房间助理")

    ask(page, "hello from the side panel")

    expect(side_row(page, "user", "hello from the side panel")).to_be_visible()
    expect(side_row(page, "assistant", "echo: ")).to_be_visible(timeout=60_000)
    expect(panel(page).locator(".assistant-thinking")).to_have_count(0)
    expect(page.locator("#durable article.msg", has_text="hello from the side panel")).to_have_count(0)

    page.reload()  # the history is read again when the panel opens
    page.wait_for_selector("body[data-ready=true]", state="attached", timeout=15_000)
    expect(side_row(page, "user", "hello from the side panel")).to_have_count(1)
    expect(side_row(page, "assistant", "echo: ")).not_to_have_count(0)


def test_what_the_assistant_dispatches_shows_in_the_timeline_as_a_dispatch_row_with_its_targets(room, open_page):
    page = open_page(room)
    dispatch = {
        "to": ["agent:kimi", "agent:grok"],
        "content": "Each of you: one line of status, please.",
        "clientCommandId": "ui-dispatch-1",
    }

    ask(page, f"Get a status from Kimi and Grok [[fake: mcp tool=worker_dispatch args='{json.dumps(dispatch)}']]")

    row = page.locator('#durable .dispatch[data-type="operator.dispatch"]')
    expect(row).to_be_visible(timeout=60_000)
    expect(row.locator(".dispatch-badge")).to_have_text("Operator dispatch")
    expect(row.locator(".dispatch-author")).to_have_text("房间助理")
    expect(row.locator(".dispatch-verb")).to_have_text("dispatched to")
    expect(row.locator(".dispatch-target")).to_have_text(["@Grok", "@Kimi"])
    expect(row.locator(".dispatch-content")).to_have_text("Each of you: one line of status, please.")
    # Its Turns' chips are on the row, and each target's reply quotes the dispatch as its request.
    expect(row.locator('.turn-chip[data-status="completed"]')).to_have_count(2, timeout=60_000)
    for agent in ("agent:kimi", "agent:grok"):
        quote = page.locator(f'article.msg--turn[data-actor-id="{agent}"] .ref--reply')
        expect(quote).to_contain_text("Each of you: one line of status")
    expect(page.locator("#durable article.msg--user")).to_have_count(0)  # no chat bubble for it
    expect(side_row(page, "assistant", "mcp:worker_dispatch:ok")).to_be_visible(timeout=60_000)


def test_while_the_assistant_thinks_the_chat_says_so_and_stop_ends_its_run(room, open_page):
    page = open_page(room)
    expect(page.locator("#assistant-status")).to_have_text("ready")

    ask(page, "think about it forever [[fake: hang]]")

    thinking = panel(page).locator(".assistant-thinking")
    expect(thinking).to_contain_text("is thinking")
    expect(page.locator("#assistant-send")).to_be_hidden()  # one run at a time: Stop takes its place
    expect(page.locator("#assistant-status")).to_have_text("busy")
    page.reload()  # a fresh page joins the run in flight under the question's own clientCommandId
    page.wait_for_selector("body[data-ready=true]", state="attached", timeout=15_000)
    expect(thinking).to_contain_text("is thinking")
    expect(panel(page).locator(".assistant-msg--user", has_text="think about it forever")).to_have_count(1)
    panel(page).get_by_role("button", name="Stop").click()

    expect(thinking).to_have_count(0, timeout=30_000)
    expect(side_row(page, "user", "think about it forever")).to_be_visible()
    expect(panel(page).get_by_role("button", name="Stop")).to_be_hidden()
    expect(page.locator("#assistant-status")).to_have_text("ready")
    # The stopped run is stored as a short reply; the assistant answers the next message.
    ask(page, "are you back?")
    expect(side_row(page, "assistant", "echo: are you back?")).to_be_visible(timeout=60_000)


def test_the_panel_collapses_and_expands_from_the_top_bar_and_remembers_it(room, open_page):
    page = open_page(room)
    toggle = page.locator("#assistant-toggle")
    expect(panel(page)).to_be_visible()

    panel(page).get_by_role("button", name="Hide the assistant").click()
    expect(panel(page)).to_be_hidden()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(toggle).to_be_focused()  # the keyboard is back where the panel opens again

    page.reload()
    page.wait_for_selector("body[data-ready=true]", state="attached", timeout=15_000)
    expect(toggle).to_be_visible()
    expect(panel(page)).to_be_hidden()

    toggle.click()
    expect(panel(page)).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(page.get_by_label("Message to the assistant")).to_be_focused()


def test_on_a_phone_the_assistant_opens_as_a_bottom_sheet_over_the_room(room, open_page):
    page = open_page(room, width=390, height=844)
    toggle = page.get_by_role("button", name="Assistant")
    expect(toggle).to_be_visible()
    expect(panel(page)).to_be_hidden()  # a phone opens the sheet on demand
    assert page.evaluate("document.documentElement.scrollWidth") <= 390

    toggle.click()

    expect(panel(page)).to_be_visible()
    box = panel(page).bounding_box()
    assert box["x"] == 0 and box["width"] == 390
    assert box["y"] + box["height"] == 844 and box["y"] > 844 / 5  # anchored to the bottom, the room above
    ask(page, "hello from a phone")
    expect(side_row(page, "assistant", "echo: hello from a phone")).to_be_visible(timeout=60_000)

    page.keyboard.press("Escape")
    expect(panel(page)).to_be_hidden()


# The module's room changes here: a saved assistant block asks for a restart (D47), so the
# tests that need a ready assistant come before these two.


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
    assert saved == {
        "enabled": True,
        "name": "Room helper",
        "extraInstructions": "Answer in one paragraph.",
        "brain": {"driver": "claude", "cwd": str(brain_dir), "command": "claude"},
    }

    page.reload()  # the page reads the saved card back
    expect(card.get_by_label("Name")).to_have_value("Room helper")
    expect(card.get_by_label("Driver")).to_have_value("claude")
    expect(card.get_by_label("Enabled")).to_be_checked()

    # The running assistant keeps its old brain until GroupX restarts, and the panel says so.
    page.goto(room.url("/"))
    expect(page.locator("#assistant-status")).to_have_text("restart required")
    expect(page.locator("#assistant-toggle")).to_have_attribute("data-status", "restart_required")
    expect(page.locator("#assistant-detail")).not_to_be_empty()


def test_a_send_that_did_not_get_through_shows_its_code_and_retry_sends_it_once(tmp_path, open_page):
    server = assistant_room(tmp_path, "kimi", timeouts={"handshakeMs": 600000, "closeMs": 300})
    try:
        page = open_page(server)
        expect(page.locator("#assistant-status")).to_have_text("ready")
        sent = []  # the bodies the page posted, observed on their way out
        page.on(
            "request",
            lambda r: (
                r.method == "POST"
                and r.url.endswith("/api/assistant/messages")
                and sent.append(json.loads(r.post_data))
            ),
        )
        port = server.port
        server.stop()

        ask(page, "are you there?")

        error = panel(page).locator("#assistant-error")
        expect(error).to_be_visible()
        expect(error.locator(".error-code")).to_have_text("NETWORK_ERROR")
        expect(side_row(page, "user", "are you there?")).to_have_count(0)  # shown as not sent
        expect(panel(page).locator('.assistant-msg--user[data-state="failed"]')).to_have_count(1)

        server.start(port=port)
        wait_until(
            lambda: server.get("/api/assistant").json()["status"] == "ready",
            timeout=60,
            message="the assistant's brain to start again",
        )
        error.get_by_role("button", name="Retry").click()

        expect(side_row(page, "assistant", "echo: are you there?")).to_be_visible(timeout=60_000)
        expect(error).to_be_hidden()
        first, retried = sent
        assert retried == first  # the same clientCommandId: had the first reached the server, it is joined
        users = [m for m in server.get("/api/assistant/messages").json()["messages"] if m["role"] == "user"]
        assert [(m["content"], m["clientCommandId"]) for m in users] == [("are you there?", first["clientCommandId"])]
    finally:
        server.stop()


def test_with_the_assistant_off_the_panel_stays_folded_and_says_how_to_turn_it_on(make_server, open_page):
    page = open_page(make_server())  # a room without an assistant block: the assistant is off
    toggle = page.locator("#assistant-toggle")
    expect(toggle).to_be_visible()
    expect(toggle).to_have_attribute("data-status", "disabled")
    expect(panel(page)).to_be_hidden()

    toggle.click()

    expect(page.locator("#assistant-status")).to_have_text("off")
    expect(page.locator("#assistant-detail")).to_contain_text("Turn it on in Agent settings")
    expect(page.get_by_label("Message to the assistant")).to_be_disabled()

"""The room's events and errors in words: a sentence per event type, bookkeeping runs folded into
one quiet line, an agent card with one state and the code under "details", and a send that failed
on the network retried under the same clientCommandId once the stream is back."""

from __future__ import annotations

import json
import re
import uuid

from playwright.sync_api import expect

from tests.agents import fake_agents
from tests.browser.room_page import append_raw_events, bubbles, expect_final, user_message
from tests.server import GroupXServer


def remember(server, content: str) -> None:
    response = server.post(
        "/api/memory",
        {
            "clientCommandId": str(uuid.uuid4()),
            "kind": "fact",
            "content": content,
            "scope": {"type": "room", "id": "room:main"},
        },
    )
    assert response.status_code == 201, response.text


def test_a_context_reset_reads_as_a_sentence_and_a_run_of_notes_folds_into_one_line(room, open_page):
    page = open_page(room)
    room.post("/api/messages", {"clientCommandId": str(uuid.uuid4()), "to": ["agent:kimi"], "content": "before"})
    expect(user_message(page, "before")).to_have_count(1)
    # Kimi's reply is a line of its own: it must land before the notes, or it would split their run.
    expect_final(bubbles(page, "agent:kimi"))
    reset = room.post("/api/context/reset", {"clientCommandId": str(uuid.uuid4())})
    assert reset.json()["reset"] is True, reset.text
    expect(page.locator('#durable .sys[data-type="context.reset"]')).to_contain_text("You reset the room's context")

    for n in range(3):
        remember(room, f"fact number {n}")
    folded = page.locator('#durable .sys[data-type="memory.remembered"]')
    expect(folded).to_have_count(1)
    expect(folded).to_contain_text("You remembered 3 public facts")


def test_a_refused_chain_is_a_sentence_with_its_code_under_details(room, open_page):
    page = open_page(room)
    append_raw_events(
        room,
        [
            (
                "routing.loop_stopped",
                {
                    "errorCode": "HOP_LIMIT_REACHED",
                    "commandType": "send",
                    "parentTurnId": "turn_x",
                    "message": "hop limit reached",
                },
            )
        ],
    )
    line = page.locator('#durable .sys[data-type="routing.loop_stopped"]')
    expect(line).to_contain_text("could not send its message to other agents")
    code = line.locator("details code")
    expect(code).to_be_hidden()
    line.get_by_text("details").click()
    expect(code).to_have_text("HOP_LIMIT_REACHED")


def test_a_failing_agent_card_shows_one_state_and_a_plain_sentence(tmp_path, open_page):
    agents = fake_agents(tmp_path, "kimi", "grok", scenarios={"grok": {"exit_on_start": {"code": 3, "stderr": "no"}}})
    server = GroupXServer(tmp_path, {"agents": agents, "timeouts": {"handshakeMs": 60000, "closeMs": 300}})
    try:
        server.start()
        page = open_page(server, width=1280)
        card = page.locator('.agent-card[data-actor-id="agent:grok"]')
        expect(card).to_have_attribute("data-status", "degraded")
        error = card.locator(".agent-error")
        expect(error).to_contain_text("Its CLI")
        expect(error.locator("details code")).to_be_hidden()  # the code is there, behind "details"
        expect(card.locator(".agent-status")).to_have_text("degraded")
    finally:
        server.stop()


def test_a_send_that_failed_on_the_network_goes_again_under_its_id_when_the_stream_is_back(room, open_page):
    page = open_page(room)
    sent = []
    page.on(
        "request",
        lambda r: r.method == "POST" and r.url.endswith("/api/messages") and sent.append(json.loads(r.post_data)),
    )
    expect(page.locator("#connection")).to_have_attribute("data-state", "live")

    page.context.set_offline(True)
    box = page.get_by_label("Message", exact=True)
    box.fill("sent while offline")
    box.press("Enter")
    error = page.locator("#composer-error")
    expect(error).to_be_visible()
    expect(error.locator(".error-code")).to_have_text("NETWORK_ERROR")

    page.context.set_offline(False)
    expect(page.locator("#connection")).to_have_attribute("data-state", "live", timeout=30_000)
    expect(user_message(page, "sent while offline")).to_have_count(1)
    expect(error).to_be_hidden()
    expect(box).to_have_value("")
    ids = {body["clientCommandId"] for body in sent}
    assert len(ids) == 1, sent


def test_session_rows_say_in_words_why_an_agent_failed_or_stopped_with_the_code_under_details(tmp_path, open_page):
    agents = fake_agents(tmp_path, "kimi", "grok", scenarios={"grok": {"exit_on_start": {"code": 3, "stderr": "no"}}})
    server = GroupXServer(tmp_path, {"agents": agents, "timeouts": {"handshakeMs": 60000, "closeMs": 300}})
    try:
        server.start()
        page = open_page(server, width=1280)
        failed = page.locator('#durable .sys--session .sys-item[data-type="session.failed"]').first
        expect(failed).to_contain_text("Grok failed to start: its CLI")
        code = failed.locator("details code")
        expect(code).to_be_hidden()  # a code is never the sentence
        failed.get_by_text("details").click()
        expect(code).to_have_text(re.compile(r"^[A-Z_]+$"))
        # A later row replaces an agent's entry (it shows its latest state), so the stop is the last event.
        append_raw_events(server, [("session.stopped", {"actorId": "agent:kimi", "reason": "restart"})])
        stopped = page.locator('#durable .sys-item[data-type="session.stopped"]')
        expect(stopped).to_contain_text("session stopped: its CLI was restarted")
        expect(stopped).not_to_contain_text("(restart)")
    finally:
        server.stop()

"""The context usage meter and manual compaction from the composer (FEATURES §14, §17)."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.agents import fake_agents, send, wait_terminal

METER = re.compile(r"^([\d,]+) chars of 256,000 \(not tokens\)$")


def shown_characters(page) -> int:
    text = page.locator("#context-meter .meter-text").inner_text()
    match = METER.match(text)
    assert match, text
    return int(match.group(1).replace(",", ""))


def test_the_meter_follows_the_room_and_the_compact_button_shrinks_it(make_server, tmp_path, open_page):
    # Kimi is first in config order, so it writes the checkpoint summary.
    scenarios = {"kimi": {"default_turn": ["reply text=SUMMARY-OK"]}}
    server = make_server(fake_agents(tmp_path, "kimi", "grok", scenarios=scenarios))
    page = open_page(server)
    meter = page.locator("#context-meter")
    compact = meter.get_by_role("button", name="Compact")

    expect(meter.locator(".meter-text")).to_have_text(METER)
    expect(meter.locator(".meter-percent")).to_have_text("0%")
    expect(compact).to_be_disabled()  # nothing to compact yet
    empty = shown_characters(page)

    # 7 questions and 7 answers: 14 room messages, more than the 12 kept verbatim.
    for i in range(7):
        turn = send(server, "agent:grok", f"question {i} " + "lorem ipsum " * 400)["turns"][0]
        wait_terminal(server, turn["turnId"])

    expect(compact).to_be_enabled()  # the meter re-read usage on message.created, no reload
    usage = server.get("/api/context").json()
    assert usage["uncompactedMessageCount"] == 14 and usage["compactable"]
    expect(meter.locator(".meter-text")).to_have_text(f"{usage['estimatedCharacters']:,} chars of 256,000 (not tokens)")
    expect(meter.locator(".meter-bar")).to_have_attribute("aria-valuenow", str(usage["utilizationPercent"]))
    before = shown_characters(page)
    assert before > empty

    compact.click()

    status = page.locator("#compaction-status")
    expect(status).to_have_attribute("data-tone", "ok", timeout=30_000)
    expect(status).to_contain_text("Compacted")
    expect(compact).to_be_disabled()  # 12 messages left: nothing more to compact
    after = server.get("/api/context").json()
    assert after["uncompactedMessageCount"] == 12 and after["summaryThroughSeq"]
    expect(meter.locator(".meter-text")).to_have_text(f"{after['estimatedCharacters']:,} chars of 256,000 (not tokens)")
    assert shown_characters(page) < before


def test_a_failed_compaction_shows_its_error_code(make_server, tmp_path, open_page):
    # The only summariser fails every Turn, so compaction has no agent that can write the summary.
    server = make_server(fake_agents(tmp_path, "kimi", scenarios={"kimi": {"default_turn": ["fail"]}}))
    for i in range(7):
        turn = send(server, "agent:kimi", f"[[fake: reply text=answer-{i}]] question {i}")["turns"][0]
        wait_terminal(server, turn["turnId"])
    page = open_page(server)
    compact = page.locator("#context-meter").get_by_role("button", name="Compact")
    expect(compact).to_be_enabled()

    compact.click()

    status = page.locator("#compaction-status")
    expect(status).to_have_attribute("data-tone", "err", timeout=30_000)
    expect(status).to_contain_text(re.compile(r"Compaction failed: [A-Z_]+"))
    expect(compact).to_be_enabled()  # the history is unchanged, so it can be tried again

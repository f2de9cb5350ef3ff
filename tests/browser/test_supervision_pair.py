"""A supervision pair on the room page (FEATURES §12, §17): one group holding the worker's bubbles,
the observer's watch bubble and every steer with its reason, with the steer count and the pair's
state in its header; the same after a reload. The composer still picks workers only."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.agents import fake_agents, wait_terminal
from tests.browser.pair_scene import INTERRUPT, NUDGE, SCENARIOS, pair_up


def test_a_pair_is_one_group_with_its_bubbles_steers_reasons_and_state(make_server, tmp_path, open_page):
    server = make_server(fake_agents(tmp_path, "kimi", "hermes", "grok", scenarios=SCENARIOS))
    page = open_page(server)

    accepted = pair_up(server)
    wait_terminal(server, accepted["watchTurns"][0]["turnId"], timeout=60)

    for view in (page, open_page(server)):  # live, then from the bootstrap of a fresh page
        pair = view.locator("section.pair")
        expect(pair).to_have_count(1)
        expect(pair.locator(".pair-steers")).to_have_text("2 steers")
        expect(pair.locator('[data-pair-note="steer-nudge"]')).to_contain_text(NUDGE)
        expect(pair.locator('[data-pair-note="steer-interrupt"]')).to_contain_text(
            "an interrupt cancels the whole Turn"
        )
        expect(pair.locator('[data-pair-note="steer-interrupt"]')).to_contain_text(INTERRUPT)
        expect(pair.locator('article.msg--turn[data-actor-id="agent:grok"]')).to_have_count(1)
        # The cancelled first Turn and the two Turns the steers queued, all inside the group.
        expect(pair.locator('article.msg--turn[data-actor-id="agent:hermes"]')).to_have_count(3)
        expect(pair.locator(".pair-guidance")).to_have_count(2)
        expect(pair).to_have_attribute("data-state", "done")
        expect(pair.locator(".pair-status")).to_have_text("worker done · watch ended")
        # The brief is folded inside the group, never a bubble of its own.
        expect(view.locator(f'article[data-event-id="{accepted["watchEventId"]}"]')).to_have_count(0)


def test_the_composer_offers_no_observer_choice(room, open_page):
    page = open_page(room)
    expect(page.locator("#composer")).not_to_contain_text("observer")
    expect(page.locator("#composer")).not_to_contain_text("supervis")

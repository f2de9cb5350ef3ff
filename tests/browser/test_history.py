"""The whole history in the room page (D27): scrolling back page by page to the beginning,
search that jumps to an old message, the Markdown download and the jump back to the latest.

The log is seeded straight into SQLite (tests/history_seed.py): these tests are about reading
history, and 1,000 posted messages would each queue a Turn."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import expect

from tests.browser.room_page import address, append_raw_events, expect_final, reply, say, user_message
from tests.history_seed import message, numbered, seed_messages
from tests.server import wait_until

SHOWN = "#durable article[data-seq]"
AT_BOTTOM = (
    "() => { const s = document.getElementById('timeline'); return s.scrollHeight - s.scrollTop - s.clientHeight < 4; }"
)
OLDER_OR_START = f"""floor => Number(document.querySelector('{SHOWN}').dataset.seq) < floor
  || document.getElementById('history-note').dataset.state === 'start'"""
NEWER_OR_LIVE = f"""ceiling => {{ const all = document.querySelectorAll('{SHOWN}');
  return Number(all[all.length - 1].dataset.seq) > ceiling || document.getElementById('jump').hidden; }}"""
LOCAL_INPUT = """iso => {
  const d = new Date(iso), p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}"""


def first_seq(page) -> int:
    return int(page.locator(SHOWN).first.get_attribute("data-seq"))


def last_seq(page) -> int:
    return int(page.locator(SHOWN).last.get_attribute("data-seq"))


def scroll_to_the_beginning(page) -> None:
    while page.locator("#history-note").get_attribute("data-state") != "start":
        floor = first_seq(page)
        page.mouse.wheel(0, -50_000)
        page.wait_for_function(OLDER_OR_START, arg=floor)


def test_scrolling_up_reads_a_thousand_messages_back_to_the_beginning_without_moving_the_view(room, open_page):
    seed_messages(room, numbered(1_000))
    page = open_page(room, height=700)
    shown = page.locator(SHOWN)
    expect(page.locator("article", has_text="history line 999")).to_be_visible()
    expect(page.locator("article", has_text="history line 0")).to_have_count(0)
    first = shown.first.get_attribute("data-event-id")
    floor = first_seq(page)

    page.locator("#timeline").hover()
    page.mouse.wheel(0, -50_000)
    page.wait_for_function(OLDER_OR_START, arg=floor)

    # The older page went above: the message that was on top is still where the reader is.
    expect(page.locator(f'[data-event-id="{first}"]')).to_be_in_viewport()
    scroll_to_the_beginning(page)

    expect(page.locator("#history-note")).to_have_text("Beginning of the room")
    # Far pages were dropped on the way: the page holds a window, not the whole room.
    assert 100 <= shown.count() <= 300, shown.count()
    seqs = page.eval_on_selector_all(SHOWN, "els => els.map((e) => Number(e.dataset.seq))")
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    expect(shown.first).to_contain_text("history line 0")
    expect(page.locator("article", has_text="history line 999")).to_have_count(0)


def test_scrolling_back_down_from_the_beginning_reads_newer_pages_and_returns_to_the_live_room(room, open_page):
    seed_messages(room, numbered(1_000))
    page = open_page(room, height=700)
    page.locator("#timeline").hover()
    scroll_to_the_beginning(page)

    while page.locator("#durable article", has_text="history line 999").count() == 0:
        ceiling = last_seq(page)
        page.mouse.wheel(0, 50_000)
        page.wait_for_function(NEWER_OR_LIVE, arg=ceiling)
        assert page.locator(SHOWN).count() <= 300

    expect(page.locator("article", has_text="history line 999")).to_be_in_viewport()
    append_raw_events(room, [("message.created", {"content": "live again after the window"})])
    expect(page.locator("article", has_text="live again after the window")).to_be_visible()


def test_search_finds_an_old_message_and_jumps_to_it_in_context(room, open_page):
    old = message("the aardvark migration plan is ready", author="kimi")
    seed_messages(room, numbered(20) + [old] + numbered(1_000, text="later line {i}"))
    page = open_page(room)
    expect(page.locator("article", has_text="aardvark")).to_have_count(0)

    search = page.get_by_role("searchbox", name="Search messages")
    search.fill("AARDVARK")
    search.press("Enter")
    page.locator(".search-hit", has_text="aardvark migration plan").click()

    found = page.locator(f'#durable article[data-event-id="{old["event_id"]}"]')
    expect(found).to_have_class(re.compile(r"\bis-found\b"))
    expect(found).to_be_in_viewport()
    expect(found).to_contain_text("Kimi")
    # In context: its neighbours were read with it.
    expect(page.locator("article", has_text="history line 19")).to_have_count(1)
    expect(page.locator("article", has_text="later line 0")).to_have_count(1)


def test_a_search_hit_far_back_opens_a_window_around_it_until_the_reader_returns_to_the_latest(room, open_page):
    old = message("the pangolin decision record", author="kimi")
    seed_messages(room, numbered(50) + [old] + numbered(3_000, text="later line {i}"))
    page = open_page(room)

    search = page.get_by_role("searchbox", name="Search messages")
    search.fill("pangolin")
    search.press("Enter")
    page.locator(".search-hit", has_text="pangolin decision").click()

    found = page.locator(f'#durable article[data-event-id="{old["event_id"]}"]')
    expect(found).to_have_class(re.compile(r"\bis-found\b"))
    expect(found).to_be_in_viewport()
    assert page.locator("#durable > *").count() <= 500  # a window, not 3,000 messages
    expect(page.locator("article", has_text="history line 49")).to_have_count(1)
    append_raw_events(room, [("message.created", {"content": "news from the present"})])
    back = page.get_by_role("button", name="↓ Back to the latest")
    expect(back).to_be_visible()

    back.click()

    expect(page.locator("article", has_text="news from the present")).to_be_in_viewport()
    expect(found).to_have_count(0)
    expect(page.locator("#jump")).to_be_hidden()


def test_search_says_so_when_nothing_matches(room, open_page):
    seed_messages(room, numbered(5))
    page = open_page(room)

    search = page.get_by_role("searchbox", name="Search messages")
    search.fill("nothing-like-this")
    search.press("Enter")

    expect(page.locator("#search-results")).to_contain_text("No messages match")


def test_the_export_button_downloads_the_room_or_a_range_as_markdown(room, open_page):
    seed_messages(room, numbered(10))
    page = open_page(room)
    page.locator("#export > summary").click()

    with page.expect_download() as whole:
        page.get_by_role("link", name="Download Markdown").click()
    page.locator("#export-from").fill(page.evaluate(LOCAL_INPUT, "2026-01-01T00:00:03Z"))
    page.locator("#export-to").fill(page.evaluate(LOCAL_INPUT, "2026-01-01T00:00:06Z"))
    with page.expect_download() as ranged:
        page.get_by_role("link", name="Download Markdown").click()

    assert whole.value.suggested_filename.endswith(".md")
    text = Path(whole.value.path()).read_text(encoding="utf-8")
    assert text.startswith("# GroupX · room:main")
    assert text.index("history line 0") < text.index("history line 9")
    part = Path(ranged.value.path()).read_text(encoding="utf-8")
    assert [f"history line {i}" in part for i in range(10)] == [i in (3, 4, 5) for i in range(10)]


def sessions_ready(server) -> bool:
    events = server.get("/api/events/page", params={"limit": 500}).json()["events"]
    return sum(e["type"] == "session.ready" for e in events) == 3


def test_jump_to_latest_appears_far_from_the_newest_message_and_brings_it_back(room, open_page):
    # Once the agents' sessions are ready nothing else arrives; a late session event would rightly
    # label the button "New messages".
    wait_until(lambda: sessions_ready(room), timeout=30, message="three ready sessions")
    seed_messages(room, numbered(150))
    page = open_page(room, height=700)
    expect(page.locator("article", has_text="history line 149")).to_be_in_viewport()

    page.locator("#timeline").hover()
    page.mouse.wheel(0, -4_000)
    jump = page.get_by_role("button", name="↓ Jump to latest")
    expect(jump).to_be_visible()
    append_raw_events(room, [("message.created", {"content": "news while reading back"})])
    expect(page.get_by_role("button", name="↓ New messages")).to_be_visible()
    assert not page.evaluate(AT_BOTTOM)  # the reader was not moved

    page.get_by_role("button", name="↓ New messages").click()

    page.wait_for_function(AT_BOTTOM)
    expect(page.locator("article", has_text="news while reading back")).to_be_in_viewport()
    expect(page.locator("#jump")).to_be_hidden()


def test_back_at_the_latest_the_page_keeps_300_items_and_reads_the_dropped_ones_again(room, open_page):
    seed_messages(room, numbered(1_000))
    page = open_page(room, height=700)
    shown = page.locator(SHOWN)
    expect(page.locator("article", has_text="history line 999")).to_be_visible()
    page.locator("#timeline").hover()
    while first_seq(page) > 500:
        floor = first_seq(page)
        page.mouse.wheel(0, -50_000)
        page.wait_for_function(OLDER_OR_START, arg=floor)
    assert shown.count() <= 300

    page.locator("#jump").click()  # "Back to the latest": the newest end was dropped on the way up
    expect(page.locator("article", has_text="history line 999")).to_be_in_viewport()
    assert page.locator("#durable > *").count() <= 300
    expect(page.locator("#history-note")).to_have_attribute("data-state", "older")

    page.locator("#timeline").hover()
    scroll_to_the_beginning(page)
    seqs = page.eval_on_selector_all(SHOWN, "els => els.map((e) => Number(e.dataset.seq))")
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs) <= 300
    expect(shown.first).to_contain_text("history line 0")


def test_a_hostile_message_found_by_search_stays_text(room, open_page):
    seed_messages(room, [message('<img src=x onerror="document.body.dataset.owned=1"> okapi <b>bold</b>')])
    page = open_page(room)

    search = page.get_by_role("searchbox", name="Search messages")
    search.fill("okapi")
    search.press("Enter")

    hit = page.locator(".search-hit", has_text="okapi")
    expect(hit).to_contain_text('<img src=x onerror="document.body.dataset.owned=1">')
    expect(page.locator("#search-results img, #search-results b")).to_have_count(0)
    expect(hit.locator("mark")).to_have_text("okapi")
    assert page.evaluate("document.body.dataset.owned") is None


def test_an_answered_message_read_back_from_history_looks_as_it_did_live(room, open_page):
    page = open_page(room)
    address(page, "Kimi")
    say(page, "an early question")
    expect_final(reply(page, "agent:kimi", "echo: an early question"))
    seed_messages(room, numbered(250))

    page = open_page(room, height=700)
    question = user_message(page, "an early question")
    expect(question).to_have_count(0)
    page.locator("#timeline").hover()
    while not question.count() and page.locator("#history-note").get_attribute("data-state") != "start":
        floor = first_seq(page)
        page.mouse.wheel(0, -50_000)
        page.wait_for_function(OLDER_OR_START, arg=floor)

    expect(question.locator(".turn-chip")).to_contain_text("replied")
    answer = reply(page, "agent:kimi", "echo: an early question")
    expect_final(answer)
    expect(page.locator("#live article")).to_have_count(0)  # no Turn of the past looks busy

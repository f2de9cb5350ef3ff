"""The room as people expect a chat to behave, through the page: replies grouped under what they
answer, a timeline that stays small however long the room and can go anywhere, one Tab stop with
arrow keys inside, and small comforts (the bootstrap read while the scripts load, a growing message
box, Up to recall the last message, "Stop all").

Long rooms are seeded straight into the store (tests/history_seed.py): these tests are about
reading history, and 5,000 posted messages would each queue a Turn."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from playwright.sync_api import Page, expect

from tests.browser.room_page import (
    address,
    append_raw_events,
    expect_final,
    message_ids,
    reply,
    say,
    user_message,
)
from tests.browser.test_history import sessions_ready
from tests.history_seed import message, numbered, seed_messages
from tests.server import wait_until

ARTICLES = "#timeline article.msg"
OLDER_OR_START = """floor => Number(document.querySelector('#durable [data-seq]').dataset.seq) < floor
  || document.getElementById('history-note').dataset.state === 'start'"""
ACTIVE_IN_TIMELINE = "() => document.getElementById('timeline').contains(document.activeElement)"
ACTIVE_TEXT = "() => (document.activeElement.closest('article') || document.activeElement).innerText"
# The page cannot be hidden for real in a headless browser: set what a hidden tab reports.
SET_VISIBILITY = """hidden => {
  Object.defineProperty(document, "hidden", { configurable: true, get: () => hidden });
  Object.defineProperty(document, "visibilityState", { configurable: true, get: () => (hidden ? "hidden" : "visible") });
  document.dispatchEvent(new Event("visibilitychange"));
}"""


def box(page: Page):
    return page.get_by_label("Message", exact=True)


def first_seq(page: Page) -> int:
    return int(page.locator("#durable [data-seq]").first.get_attribute("data-seq"))


# ---- replies grouped under what they answer ----------------------------------------------------------


def test_an_all_prompt_and_its_replies_read_as_one_unit_without_repeated_quotes_and_collapse(room, open_page):
    page = open_page(room)
    address(page, "@all")
    say(page, "first question for everyone")
    for actor in ("agent:grok", "agent:hermes", "agent:kimi"):
        expect_final(reply(page, actor, "first question for everyone"))
    address(page, "Kimi")
    say(page, "a second, later prompt")
    expect_final(reply(page, "agent:kimi", "a second, later prompt"))

    prompt = user_message(page, "first question for everyone")
    prompt_id = prompt.get_attribute("data-event-id")
    thread = page.locator(f'.thread[data-thread-of="{prompt_id}"]')
    replies = thread.locator("article.msg--turn")
    expect(replies).to_have_count(3)
    # Under the prompt, before the later prompt: not interleaved with it.
    ids = message_ids(page)
    later = ids.index(user_message(page, "a second, later prompt").get_attribute("data-event-id"))
    assert all(ids.index(r.get_attribute("data-event-id")) < later for r in replies.all())
    expect(replies.locator(".ref--reply")).to_have_count(0)  # the prompt is right above: no quote

    toggle = thread.get_by_role("button", name="Hide 3 replies")
    toggle.click()
    expect(replies.first).to_be_hidden()
    expect(thread.get_by_role("button", name="Show 3 replies")).to_have_attribute("aria-expanded", "false")
    thread.get_by_role("button", name="Show 3 replies").press("Enter")
    expect(replies).to_have_count(3)
    expect(replies.first).to_be_visible()


def test_a_reply_to_a_message_older_than_the_page_shows_its_excerpt(room, open_page):
    old = message("the original question about the parser rewrite")
    answer = message("yes, the parser is done", author="kimi", reply_to=old["event_id"])
    seed_messages(room, [old] + numbered(150) + [answer])
    page = open_page(room)

    quote = page.locator("article", has_text="yes, the parser is done").locator(".ref--reply")

    expect(quote).to_contain_text("the original question about the parser rewrite")
    expect(quote.locator(".ref-author")).to_have_text("You")
    expect(page.locator("article .msg-body", has_text="the original question about the parser rewrite")).to_have_count(
        0
    )


def test_consecutive_messages_by_one_author_show_one_avatar_and_name(room, open_page):
    seed_messages(
        room,
        [
            message("kimi one", author="kimi"),
            message("kimi two", author="kimi"),
            message("kimi three", author="kimi"),
            message("mine", author="user"),
            message("kimi again", author="kimi"),
        ],
    )
    page = open_page(room)

    def article(text):
        return page.locator("article", has_text=text)

    expect(article("kimi one").locator(".avatar")).to_be_visible()
    expect(article("kimi one").locator(".msg-author")).to_be_visible()
    for text in ("kimi two", "kimi three"):
        expect(article(text)).to_have_class(re.compile(r"\bmsg--cont\b"))
        expect(article(text).locator(".avatar")).to_be_hidden()
        expect(article(text).locator(".msg-author")).to_be_hidden()
        expect(article(text)).to_have_attribute("aria-label", re.compile("^Kimi at "))  # still named to a reader
    expect(article("kimi again").locator(".avatar")).to_be_visible()


# ---- a timeline that stays small and can go anywhere --------------------------------------------------


def test_scrolling_a_five_thousand_message_room_to_its_first_message_keeps_at_most_400_messages(room, open_page):
    seed_messages(room, numbered(5_000))
    page = open_page(room, height=800)
    expect(page.locator("article", has_text="history line 4999")).to_be_visible()
    page.locator("#timeline").hover()

    most = 0
    while page.locator("#history-note").get_attribute("data-state") != "start":
        floor = first_seq(page)
        page.mouse.wheel(0, -50_000)
        page.wait_for_function(OLDER_OR_START, arg=floor)
        most = max(most, page.locator(ARTICLES).count())

    first = page.locator(ARTICLES).first
    expect(first).to_contain_text("history line 0")
    first.scroll_into_view_if_needed()
    expect(first).to_be_in_viewport()
    assert page.locator(ARTICLES).count() <= 400
    assert most <= 400, most
    assert page.evaluate("document.querySelectorAll('*').length") < 20_000


def test_go_to_the_beginning_and_to_a_date_then_back_to_the_latest(room, open_page):
    start = datetime(2027, 2, 1, tzinfo=UTC)  # later than the server's own start-up events, as seq is
    seed_messages(room, [message(f"message {i:03d}", at=start + timedelta(hours=i)) for i in range(240)])
    page = open_page(room)
    goto = page.locator("#goto")

    goto.locator("summary").click()
    goto.get_by_role("button", name="The beginning").click()

    expect(page.locator("article", has_text="message 000")).to_be_in_viewport()
    expect(page.locator("#history-note")).to_have_text("Beginning of the room")
    expect(page.locator("article", has_text="message 239")).to_have_count(0)

    midnight = page.evaluate("() => new Date('2027-02-05T00:00:00').toISOString()")
    expected = max(0, -(-(datetime.fromisoformat(midnight.replace("Z", "+00:00")) - start) // timedelta(hours=1)))
    goto.locator("summary").click()
    goto.get_by_label("Date").fill("2027-02-05")
    goto.get_by_role("button", name="Go to this date").click()

    target = page.locator("article", has_text=f"message {expected:03d}")
    expect(target).to_be_in_viewport()
    assert page.evaluate(ACTIVE_IN_TIMELINE)  # the keyboard lands where the reader looks

    page.get_by_role("button", name="↓ Back to the latest").click()
    expect(page.locator("article", has_text="message 239")).to_be_in_viewport()


def test_a_date_with_nothing_after_it_says_so(room, open_page):
    seed_messages(room, numbered(3))
    page = open_page(room)
    goto = page.locator("#goto")

    goto.locator("summary").click()
    goto.get_by_label("Date").fill("2099-01-01")
    goto.get_by_role("button", name="Go to this date").click()

    expect(page.locator("#goto-note")).to_have_text("Nothing was written on or after that date.")
    expect(page.locator("article", has_text="history line 2")).to_be_visible()


def test_a_new_messages_divider_marks_what_came_while_the_reader_was_away(room, open_page):
    seed_messages(room, numbered(5))
    page = open_page(room)
    head = int(page.locator("#durable [data-seq]").last.get_attribute("data-seq"))
    page.wait_for_function("head => Number(localStorage.getItem('groupx.lastSeenSeq')) >= head", arg=head)
    expect(page.locator(".unread-divider")).to_have_count(0)
    # Back with nothing new, and a message while the reader is here: no divider.
    page.reload()
    page.wait_for_selector("body[data-ready=true]", state="attached")
    append_raw_events(room, [("message.created", {"content": "said while here"})])
    expect(page.locator("article", has_text="said while here")).to_be_visible()
    expect(page.locator(".unread-divider")).to_have_count(0)
    head = int(page.locator("#durable [data-seq]").last.get_attribute("data-seq"))
    page.wait_for_function("head => Number(localStorage.getItem('groupx.lastSeenSeq')) >= head", arg=head)
    context = page.context
    page.close()

    seed_messages(room, numbered(3, text="while away {i}"))
    again = context.new_page()
    again.goto(room.url("/"))

    divider = again.get_by_role("separator", name="New messages")
    expect(divider).to_have_count(1)
    expect(again.locator(".unread-divider + article")).to_contain_text("while away 0")

    # A hidden tab: what arrives meanwhile gets the divider, once.
    again.evaluate(SET_VISIBILITY, True)
    append_raw_events(
        room,
        [
            ("message.created", {"content": "news while hidden"}),
            ("message.created", {"content": "more news while hidden"}),
        ],
    )
    expect(again.locator(".unread-divider + article")).to_contain_text("news while hidden")
    again.evaluate(SET_VISIBILITY, False)
    expect(divider).to_have_count(1)
    # Back in front of the reader: what comes next needs no divider.
    append_raw_events(room, [("message.created", {"content": "said while reading"})])
    expect(again.locator("article", has_text="said while reading")).to_be_visible()
    expect(again.locator(".unread-divider + article")).to_contain_text("news while hidden")


def test_the_timeline_is_one_tab_stop_with_arrow_keys_inside(room, open_page):
    # After the agents' session lines, so the newest item is a message.
    wait_until(lambda: sessions_ready(room), timeout=30, message="three ready sessions")
    seed_messages(room, [message(f"line {i}", author=("user", "kimi")[i % 2]) for i in range(6)])
    page = open_page(room)
    page.locator("#recipient-chips button").first.focus()  # the first stop after the timeline

    page.keyboard.press("Shift+Tab")
    assert "line 5" in page.evaluate(ACTIVE_TEXT)  # the newest message is the timeline's stop
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    assert "line 3" in page.evaluate(ACTIVE_TEXT)
    page.keyboard.press("Home")
    first_text = page.evaluate(ACTIVE_TEXT)
    page.keyboard.press("End")
    assert "line 5" in page.evaluate(ACTIVE_TEXT) and first_text != page.evaluate(ACTIVE_TEXT)
    page.keyboard.press("ArrowUp")

    # Tab: the focused message's own Reply and Forward, then out of the timeline, past no other message.
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "Reply to You"
    expect(page.locator("article", has_text="line 4").locator(".msg-actions")).to_have_css("opacity", "1")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "Forward You's message"
    page.keyboard.press("Tab")
    assert not page.evaluate(ACTIVE_IN_TIMELINE)
    assert page.evaluate("document.activeElement.closest('#composer') !== null")
    # Shift+Tab comes back to the same message (itself, not its last button), the only stop in the timeline.
    page.keyboard.press("Shift+Tab")
    assert "line 4" in page.evaluate(ACTIVE_TEXT)
    assert page.evaluate("document.activeElement.matches('article')")
    page.keyboard.press("Shift+Tab")
    assert not page.evaluate(ACTIVE_IN_TIMELINE)


def test_reply_and_forward_show_on_hover_without_moving_anything(room, open_page):
    seed_messages(room, numbered(3))
    page = open_page(room)
    article = page.locator("article", has_text="history line 1")
    actions = article.locator(".msg-actions")
    before = article.bounding_box()
    expect(actions).to_have_css("opacity", "0")

    article.hover()

    expect(actions).to_have_css("opacity", "1")
    assert article.bounding_box() == before


# ---- load and small comforts ----------------------------------------------------------------------


def test_the_room_data_is_asked_for_while_the_modules_are_still_loading(room, open_page):
    page = open_page(room)
    loaded = page.evaluate("""() => performance.getEntriesByType('resource').map(e => new URL(e.name).pathname)""")
    preloaded = set(
        page.eval_on_selector_all('link[rel="modulepreload"]', "els => els.map(e => new URL(e.href).pathname)")
    )
    modules = {name for name in loaded if name.startswith("/static/rooms/") and name.endswith(".js")}
    classic = ("theme", "boot_fetch", "room", "demo_banner")  # not preloaded: scripts, and the entry itself
    modules = {
        name
        for name in modules
        if not re.fullmatch(rf"/static/rooms/({'|'.join(classic)})(\.[0-9a-f]{{12}})?\.js", name)
    }
    assert modules and modules <= preloaded  # no module waited for its importer to load first

    # room.js takes the early request for its first snapshot: one bootstrap until the page is ready
    # (a later one, after the roster or the stream changed, is the page's own rebuild, not counted).
    asked = []

    def note_bootstrap(request):
        if request.url.endswith("/api/bootstrap"):
            asked.append(request.url)

    page.on("request", note_bootstrap)
    page.goto(room.url("/"))
    page.wait_for_selector("body[data-ready=true]", state="attached")
    page.remove_listener("request", note_bootstrap)
    assert len(asked) == 1

    # Hold one module back: the room's data is asked for all the same, while the graph cannot finish.
    held = []
    page.route(re.compile(r"/static/rooms/live_markdown(\.[0-9a-f]{12})?\.js$"), lambda route: held.append(route))
    with page.expect_request("**/api/bootstrap"):
        page.goto(room.url("/"), wait_until="commit")
    assert held and page.evaluate("document.body.dataset.ready") is None
    for route in held:
        route.continue_()
    page.wait_for_selector("body[data-ready=true]", state="attached")


def test_the_message_box_grows_with_its_lines_and_shrinks_after_sending(room, open_page):
    page = open_page(room)
    address(page, "Kimi")
    message_box = box(page)
    height = message_box.bounding_box()["height"]

    message_box.fill("\n".join(f"line {i}" for i in range(12)))

    grown = message_box.bounding_box()["height"]
    assert grown > height * 2
    assert grown <= page.viewport_size["height"] * 0.41
    message_box.press("Enter")
    expect(user_message(page, "line 11")).to_be_visible()
    expect(message_box).to_have_value("")
    assert message_box.bounding_box()["height"] == height


def test_up_arrow_in_an_empty_box_recalls_the_last_message(room, open_page):
    page = open_page(room)
    address(page, "Kimi")
    say(page, "a message worth sending twice")
    expect(user_message(page, "a message worth sending twice")).to_be_visible()

    box(page).press("ArrowUp")

    expect(box(page)).to_have_value("a message worth sending twice")
    box(page).press("ArrowUp")  # not empty now: Up moves the caret as usual
    expect(box(page)).to_have_value("a message worth sending twice")


def test_stop_all_cancels_every_running_turn(room, open_page):
    page = open_page(room)
    stop_all = page.get_by_role("button", name=re.compile("^Stop all"))
    expect(stop_all).to_be_hidden()
    address(page, "@all")

    say(page, "work until stopped [[fake: silent]]")
    expect(page.locator("article.msg--turn.is-live")).to_have_count(3)
    expect(stop_all).to_have_text("Stop all (3)")
    stop_all.click()

    for actor in ("agent:grok", "agent:hermes", "agent:kimi"):
        expect(page.locator(f'.turn-chip[data-agent="{actor}"]')).to_have_attribute("data-status", "cancelled")
    expect(stop_all).to_be_hidden()

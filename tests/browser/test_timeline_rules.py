"""Timeline rules that hold whatever the agents say: unknown and reserved event types, the 500-item
cap, following the newest message, and starting over when the server's store was reset."""

from __future__ import annotations

import shutil

from playwright.sync_api import expect

from tests.browser.room_page import address, append_raw_events, expect_final, reply, say, user_message

AT_BOTTOM = (
    "() => { const s = document.getElementById('timeline'); return s.scrollHeight - s.scrollTop - s.clientHeight < 4; }"
)


def notes(n: int, start: int = 0) -> list[tuple[str, dict]]:
    return [("example.future_note", {"message": f"note {i}"}) for i in range(start, start + n)]


def test_unknown_event_types_are_shown_generically_and_reserved_ones_never(room, open_page):
    page = open_page(room)

    append_raw_events(
        room,
        [
            ("approval.requested", {"content": "approve me"}),
            ("permission.asked", {"content": "let me in"}),
            ("user_input.requested", {"content": "type here"}),
            ("example.future_event", {"message": "hop limit reached"}),  # known types have sentences
        ],
    )

    line = page.locator(".sys--generic")
    expect(line).to_have_count(1, timeout=10_000)
    expect(line).to_contain_text("example.future_event — hop limit reached")
    expect(page.locator("#timeline")).not_to_contain_text("approve me")
    expect(page.locator("#timeline")).not_to_contain_text("let me in")
    expect(page.locator("#timeline")).not_to_contain_text("type here")
    expect(page.locator("#timeline button", has_text="Approve")).to_have_count(0)


def test_at_most_300_items_stay_on_the_page(room, open_page):
    page = open_page(room)

    append_raw_events(room, notes(650))

    expect(page.locator(".sys--generic", has_text="note 649")).to_be_visible(timeout=15_000)
    count = page.locator("#durable > *").count()
    assert 250 <= count <= 300, count
    expect(page.locator(".sys--generic", has_text="note 0")).to_have_count(0)
    expect(page.locator("#history-note")).to_be_visible()


def test_reading_back_pauses_following_and_sending_resumes_it(room, open_page):
    page = open_page(room, height=600)
    address(page, "Kimi")
    append_raw_events(room, notes(60))
    expect(page.locator(".sys--generic", has_text="note 59")).to_be_visible(timeout=10_000)
    page.wait_for_function(AT_BOTTOM)

    page.locator("#timeline").hover()
    page.mouse.wheel(0, -800)
    page.wait_for_function("() => document.getElementById('timeline').scrollTop > 0")
    page.wait_for_function(f"() => !({AT_BOTTOM})()")
    append_raw_events(room, notes(5, start=60))

    jump = page.get_by_role("button", name="↓ New messages")
    expect(jump).to_be_visible(timeout=10_000)
    assert not page.evaluate(AT_BOTTOM)  # the reader was not moved
    jump.click()
    page.wait_for_function(AT_BOTTOM)

    page.locator("#timeline").hover()
    page.mouse.wheel(0, -800)
    page.wait_for_function(f"() => !({AT_BOTTOM})()")
    say(page, "and we are back")
    expect_final(reply(page, "agent:kimi", "echo: and we are back"))
    page.wait_for_function(AT_BOTTOM)


def test_a_reset_store_makes_the_page_start_over(room, open_page):
    page = open_page(room)
    address(page, "Kimi")
    say(page, "before the reset")
    expect_final(reply(page, "agent:kimi", "echo: before the reset"))

    room.stop()
    shutil.rmtree(room.workdir / ".groupx")  # a fresh store: its head is behind the page's cursor
    room.start(port=room.port)

    expect(user_message(page, "before the reset")).to_have_count(0, timeout=30_000)
    expect(page.locator("#connection")).to_have_attribute("data-state", "live", timeout=30_000)
    say(page, "after the reset")
    expect_final(reply(page, "agent:kimi", "echo: after the reset"))


STREAM_RULES = """async () => {
  const { RoomStream, backoffDelay } = await import('/static/rooms/stream.js');
  const seen = [], reconnects = [], resets = [];
  const stream = new RoomStream({
    onDurable: (e) => seen.push(e.seq), onTransient: (e) => seen.push(e.type),
    onReset: () => resets.push(true), onState: () => {},
  });
  stream.reconnect = (options) => reconnects.push(options || {});
  const frame = (body) => stream.frame(JSON.stringify(body));
  stream.lastSeq = 10;
  stream.fresh = true;
  frame({ type: 'x', seq: 14 });             // first frame after (re)opening: the server's replay
  frame({ type: 'x', seq: 14 });             // a duplicate
  frame({ type: 'x', seq: 15 });
  frame({ type: 'turn.content.delta', seq: null });
  frame({ type: 'x', seq: 17 });             // 16 is missing
  const afterGap = stream.lastSeq;
  frame({ type: 'stream.reset', seq: null });
  const delays = [0, 1, 2, 3, 10, 20].map((a) => backoffDelay(a));
  return { seen, reconnects: reconnects.length, afterGap, resets: resets.length, delays };
}"""


def test_the_stream_client_skips_duplicates_reconnects_on_a_gap_and_restarts_on_reset(room, open_page):
    page = open_page(room)

    result = page.evaluate(STREAM_RULES)

    assert result["seen"] == [14, 15, "turn.content.delta"]
    assert result["reconnects"] == 1 and result["afterGap"] == 15  # reopened from the last seq applied
    assert result["resets"] == 1
    first, second, third, fourth, far, farther = result["delays"]
    assert 200 <= first <= 300 and 400 <= second <= 600 and 800 <= third <= 1200 and 1600 <= fourth <= 2400
    assert 8000 <= far <= 12000 and 8000 <= farther <= 12000

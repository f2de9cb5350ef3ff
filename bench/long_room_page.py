"""The room page on a long room: first paint, the last message visible, and the page's size after
scrolling back to the first message, in Debian's Chromium (Playwright) against a seeded room.

    python -m bench.long_room_page [--events 5000] [--runs 5] [--no-scroll]

Prints one JSON object: per fresh page load (a new browser context, so no cache), the first
contentful paint and the moment the newest message is visible (milliseconds from navigation
start, the browser's own clock), the median of the runs; then, once, scrolling from the newest to the
first message: how many pages were read, the most message elements the DOM held on the way and
the element count at the start. Nothing is asserted: these are measurements
(tests/browser/test_long_rooms.py asserts the element count).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from bench.history import seed
from bench.server import BenchServer

LAST_VISIBLE = """last => {
  const el = [...document.querySelectorAll('#durable article')].find((a) => a.textContent.includes(last));
  if (!el) return false;
  const box = el.getBoundingClientRect(), view = document.getElementById('timeline').getBoundingClientRect();
  return box.bottom > view.top && box.top < view.bottom && performance.now();
}"""
PAINT = "() => (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime"
OLDER_OR_START = """floor => Number(document.querySelector('#durable [data-seq]').dataset.seq) < floor
  || document.getElementById('history-note').dataset.state === 'start'"""


def load_once(browser, url: str, last_text: str) -> dict:
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        page = context.new_page()
        page.goto(url)
        visible = page.wait_for_function(LAST_VISIBLE, arg=last_text, timeout=60_000).json_value()
        return {"firstPaintMs": round(page.evaluate(PAINT), 1), "lastMessageVisibleMs": round(visible, 1)}
    finally:
        context.close()


def scroll_to_start(browser, url: str) -> dict:
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        page = context.new_page()
        page.goto(url)
        page.wait_for_selector("body[data-ready=true]", state="attached")
        page.locator("#timeline").hover()
        pages, most = 0, 0
        while page.locator("#history-note").get_attribute("data-state") != "start":
            floor = int(page.locator("#durable [data-seq]").first.get_attribute("data-seq"))
            page.mouse.wheel(0, -50_000)
            page.wait_for_function(OLDER_OR_START, arg=floor, timeout=60_000)
            pages += 1
            most = max(most, page.locator("#durable article").count())
        return {
            "pagesRead": pages,
            "mostMessageElements": most,
            "messageElementsAtStart": page.locator("#durable article").count(),
            "elementsAtStart": page.evaluate("document.querySelectorAll('*').length"),
        }
    finally:
        context.close()


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    from tests.browser.chromium import launch_options

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--no-scroll",
        action="store_true",
        help="only the loads (a page that keeps every page it read takes minutes to scroll 5,000 messages back)",
    )
    args = parser.parse_args(argv)
    server = BenchServer(Path(tempfile.mkdtemp(prefix="groupx-bench-long-room-")))
    server.migrate()
    seed(server.db_path, args.events)
    server.start()
    last_text = f"message {args.events - 1} on topic"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(**launch_options())
            runs = [load_once(browser, f"{server.base_url}/", last_text) for _ in range(args.runs)]
            results = {
                "events": args.events,
                "runs": runs,
                "firstPaintMedianMs": statistics.median(r["firstPaintMs"] for r in runs),
                "lastMessageVisibleMedianMs": statistics.median(r["lastMessageVisibleMs"] for r in runs),
            }
            if not args.no_scroll:
                results["scrollToFirstMessage"] = scroll_to_start(browser, f"{server.base_url}/")
            browser.close()
    finally:
        server.stop()
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Screenshots of a supervision pair on the room page (FEATURES §12), for the docs and design review.

    python -m tests.browser.take_pair_screenshot [--out docs/screenshots]

writes supervision-pair-{light,dark}-wide.png: a real server runs the fake Kimi, Hermes and Grok
CLIs with tests/browser/pair_scene.py's scripts; the page watches Grok watch Hermes, nudge it,
interrupt it and see the redone work end.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

from tests.agents import fake_agents, wait_terminal
from tests.browser.chromium import launch_options
from tests.browser.pair_scene import SCENARIOS, pair_up
from tests.browser.take_screenshots import run
from tests.server import GroupXServer

VIEWS = {
    "supervision-pair-light-wide.png": {"color_scheme": "light", "viewport": {"width": 1280, "height": 1000}},
    "supervision-pair-dark-wide.png": {"color_scheme": "dark", "viewport": {"width": 1280, "height": 1000}},
}


def take(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="groupx-pair-"))
    agents = fake_agents(workdir, "kimi", "hermes", "grok", scenarios=SCENARIOS)
    server = GroupXServer(workdir, {"agents": agents, "timeouts": {"handshakeMs": 600000, "closeMs": 300}})
    server.start()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(**launch_options())
            pages = {}
            for name, view in VIEWS.items():
                page = browser.new_context(**view).new_page()
                page.goto(server.url("/"))
                expect(page.locator("body[data-ready=true]")).to_be_attached(timeout=15_000)
                pages[name] = page
            accepted = pair_up(server)
            wait_terminal(server, accepted["watchTurns"][0]["turnId"], timeout=60)
            for name, page in pages.items():
                expect(page.locator("section.pair")).to_have_attribute("data-state", "done", timeout=15_000)
                page.wait_for_timeout(300)  # let the page's own follow-the-newest scroll land first
                page.locator("section.pair").evaluate("el => el.scrollIntoView({block: 'start'})")
                page.screenshot(path=str(out / name), animations="disabled")
                print(f"wrote {out / name}")
            browser.close()
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    return run(take, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())

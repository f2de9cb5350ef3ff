"""Browser tests: Playwright driving Debian's Chromium against a real GroupX server (tier 4).

Needs ``/usr/bin/chromium`` (``apt-get install chromium``) and the ``playwright`` Python package;
no browser is downloaded (never run ``playwright install``). Without Chromium every test here is
skipped with that reason; CI installs it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents import fake_agents
from tests.browser.chromium import CHROMIUM, launch_options

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    if CHROMIUM.exists():
        return
    skip = pytest.mark.skip(reason=f"browser tests need Debian's Chromium at {CHROMIUM} (apt-get install chromium)")
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import expect, sync_playwright

    # CI runs four workers on two cores, each with a server, agent CLIs and a browser: Playwright's
    # 5 s default for an assertion to become true is too tight there (a page still converges).
    expect.set_options(timeout=15_000)

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(**launch_options())
        yield browser
        browser.close()


@pytest.fixture
def open_page(browser):
    """Open the room page of a server. Every page is checked for uncaught script errors and for
    anything the Content-Security-Policy refused (no inline script or style may sneak in)."""
    contexts, errors = [], []

    def factory(server, *, width: int = 1280, height: int = 800):
        context = browser.new_context(viewport={"width": width, "height": height})
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda message: "Content Security Policy" in message.text and errors.append(message.text))
        page.goto(server.url("/"))
        page.wait_for_selector("body[data-ready=true]", state="attached", timeout=15_000)
        return page

    yield factory
    for context in contexts:
        context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


@pytest.fixture
def room(make_server, tmp_path):
    """A server with three fake ACP agents (Kimi, Hermes, Grok) that answer for real."""
    return make_server(fake_agents(tmp_path, "kimi", "hermes", "grok"))

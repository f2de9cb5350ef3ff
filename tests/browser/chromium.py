"""How the browser tests launch Debian's Chromium (no browser is ever downloaded)."""

from __future__ import annotations

from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # The pages follow the browser's languages (D123): English unless a test's context asks for
    # another (Playwright's locale=...), whatever the machine's own locale is.
    "--lang=en-US",
]


def launch_options() -> dict:
    """Keyword arguments for ``playwright.chromium.launch``."""
    return {"executable_path": str(CHROMIUM), "args": CHROMIUM_ARGS, "headless": True}

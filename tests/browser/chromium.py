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
]


def launch_options() -> dict:
    """Keyword arguments for ``playwright.chromium.launch``."""
    return {"executable_path": str(CHROMIUM), "args": CHROMIUM_ARGS, "headless": True}

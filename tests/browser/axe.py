"""axe-core (tests/browser/vendor, pinned) run inside a page: the violations a person would hit.

The script goes in through the DevTools protocol (``page.evaluate``), which the page's own
Content-Security-Policy does not govern, so the page under test is served exactly as always.
"""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page

AXE = Path(__file__).resolve().parent / "vendor" / "axe-core" / "axe.min.js"
BLOCKING = ("critical", "serious")


def blocking_violations(page: Page) -> list[str]:
    """Every critical or serious axe violation on the page as it is now, as readable lines."""
    if not page.evaluate("() => Boolean(window.axe)"):
        page.evaluate(AXE.read_text(encoding="utf-8") + "\n;true")
    violations = page.evaluate("""async () => {
        const result = await window.axe.run(document, { resultTypes: ["violations"] });
        return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help,
          targets: v.nodes.slice(0, 6).map((n) => n.target.join(" ") + " :: " + (n.failureSummary || "").split("\\n").slice(1, 2).join("")) }));
    }""")
    return [f"{v['impact']} {v['id']} ({v['help']}): {v['targets']}" for v in violations if v["impact"] in BLOCKING]

"""Each pin of third-party source names its entry of docs/UPGRADING.md, and that entry exists."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CITED = re.compile(r'docs/UPGRADING\.md "([^"]+)"')


def pin_tests() -> dict[Path, str]:
    return {
        path: path.read_text()
        for path in sorted((REPO / "tests" / "unit").glob("test_*.py"))
        if path.name != Path(__file__).name and "hashlib.sha256(inspect.getsource" in path.read_text()
    }


def test_every_pin_test_cites_an_entry_of_the_upgrading_checklist():
    pins = pin_tests()
    assert len(pins) >= 3  # the handler's, the reloader's and the socket writes'
    assert [path.name for path, text in pins.items() if not CITED.search(text)] == []


def test_every_cited_entry_is_a_heading_of_the_upgrading_checklist():
    headings = set(re.findall(r"^## (.+)$", (REPO / "docs" / "UPGRADING.md").read_text(), flags=re.M))
    cited = {name for text in pin_tests().values() for name in CITED.findall(text)}
    assert cited and cited <= headings, cited - headings

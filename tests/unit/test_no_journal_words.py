"""The repository speaks of decisions and dates, never of work sessions or tracker numbers.

Code, comments, tests and docs describe the code as it is: a reason is a decision ("D60") or a
date, not the number of a work session or of a tracker's issue (numbers that mean nothing outside
the tracker they came from). The check reads every file git tracks, as the acceptance check's
``git grep -iE`` over those two words followed by a digit would, and a failure names each file and
line. This file spells its examples in pieces so that it passes its own check."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The words a journal uses: a work session or an issue by number, singular or plural.
JOURNAL_WORDS = re.compile(r"\b(sessions?|issues?)\s+#?\s*[0-9]", re.IGNORECASE)
# A tracker's own spelling of a number: an issue or a PR with "#", or a "#" number in brackets.
TRACKER_NUMBERS = re.compile(r"\b(issue|PR|pull request)\s*#[0-9]|\(#[0-9]+\)", re.IGNORECASE)
# Third-party files kept as they were published: their changelog references are theirs.
VENDORED = ("static/vendor/", "tests/browser/vendor/")
# The examples below are spelled in pieces: whole, they would be what this file forbids.
SESSION, ISSUE = "sess" + "ion", "iss" + "ue"


def tracked_text_files() -> list[str]:
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60).stdout
    except (FileNotFoundError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout (an unpacked distribution has no history to check)")
    return [name for name in listed.decode().split("\0") if name]


def offending_lines(name: str, text: str) -> list[str]:
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        if JOURNAL_WORDS.search(line) or (not name.startswith(VENDORED) and TRACKER_NUMBERS.search(line)):
            found.append(f"{name}:{number}: {line.strip()[:120]}")
    return found


def test_no_file_names_a_work_session_or_a_tracker_number():
    offending = []
    for name in tracked_text_files():
        path = ROOT / name
        if not path.is_file():  # deleted in the work tree, not yet committed
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:  # binary (images, database fixtures), as git grep skips them
            continue
        offending += offending_lines(name, data.decode("utf-8", errors="replace"))
    assert not offending, "say D<number> or a date instead:\n" + "\n".join(offending)


@pytest.mark.parametrize(
    "line",
    [
        f"after {SESSION} 8",
        f"{SESSION.title()} 7: the pipes",
        f"Where {ISSUE} 22 stands",
        f"{ISSUE}s 6/7",
        f"{ISSUE} #22",
        "fixed (" + "#22)",
    ],
)
def test_the_check_catches_each_spelling_of_a_journal_reference(line):
    assert offending_lines("docs/X.md", line) == [f"docs/X.md:1: {line}"]


@pytest.mark.parametrize(
    "line",
    ["the agent's native session", "D60 (2026-12-04)", "color: #333", "see the install issue's fixture"],
)
def test_the_check_leaves_ordinary_words_alone(line):
    assert offending_lines("docs/X.md", line) == []

"""The fault tier (``make test-faults``; docs/DECISIONS.md D36): kills, store faults, hostile input
and hostile CLIs against real servers. ``make test`` leaves this folder out; the fixtures of
``tests/conftest.py`` (``make_server``, ``room``) serve here as everywhere.

A test that measures what it survived records it with ``record_property("figures", {...})``; the
figures are printed at the end of the run (also from xdist workers, which send their reports'
properties to the controller), so ``make test-faults`` shows what docs/RELIABILITY.md quotes.
"""

from __future__ import annotations

import json

FIGURES = "figures"


def pytest_terminal_summary(terminalreporter):
    reports = [
        report
        for report in terminalreporter.stats.get("passed", []) + terminalreporter.stats.get("failed", [])
        if report.when == "call"
    ]
    measured = [
        (report.nodeid, value) for report in reports for name, value in report.user_properties if name == FIGURES
    ]
    if not measured:
        return
    terminalreporter.section("fault tier figures")
    for nodeid, figures in measured:
        terminalreporter.write_line(f"{nodeid}: {json.dumps(figures)}")

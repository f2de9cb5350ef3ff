"""The real-CLI conformance tier (docs/CONFORMANCE.md).

Opt-in: without ``GROUPX_REAL_CLI=1`` every test here is skipped, so ``make test`` never runs
them. With it (``make test-real``), a required CLI that is not installed FAILS the tests instead
of skipping them: a missing install step must not pass silently. Install with
``python tests/realcli/install.py``.
"""

from __future__ import annotations

import os
import statistics
import uuid
from pathlib import Path

import pytest

from tests.realcli import harness, install

ENABLED = os.environ.get("GROUPX_REAL_CLI") == "1"
HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    if ENABLED:
        return
    skip = pytest.mark.skip(reason="real-CLI tier: set GROUPX_REAL_CLI=1 (make test-real)")
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(HERE):
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def real_clis():
    """Fail (not skip) when a required CLI is missing."""
    if not ENABLED:
        return {}
    found = install.clis()
    checks = {"codex": install.codex_ok, "claude": install.claude_ok, "hermes": install.hermes_ok}
    missing = [
        f"{name} {found[name].version} ({found[name].binary})"
        for name, ok in checks.items()
        if not ok(install.cache_dir())
    ]
    if missing:
        pytest.fail(
            f"GROUPX_REAL_CLI=1 but these CLIs are not installed: {', '.join(missing)}. "
            "Run `python tests/realcli/install.py` (make test-real does).",
            pytrace=False,
        )
    return found


@pytest.fixture(scope="session")
def mock(tmp_path_factory):
    model = harness.MockModel(tmp_path_factory.mktemp("mock")).start()
    yield model
    model.stop()


@pytest.fixture(scope="session")
def room(tmp_path_factory, mock, real_clis):
    """One GroupX server with the three real CLIs, shared by the turn and tool scenarios. Every test
    scripts the model with its own unique keys, so tests do not see each other's replies."""
    root = tmp_path_factory.mktemp("room")
    agents = [harness.make_agent(root, driver, driver, mock) for driver in harness.DRIVERS]
    server = harness.start_room(root / "groupx", agents)
    yield harness.Room(server, mock, {a.agent_id: a for a in agents})
    server.stop()


@pytest.fixture
def key():
    return f"K{uuid.uuid4().hex[:12]}"


def pytest_terminal_summary(terminalreporter):
    if not harness.RESULTS:
        return
    terminalreporter.section("real-CLI latencies (seconds; POST /api/messages -> terminal event)")
    rows: dict[tuple[str, str], list[float]] = {}
    for entry in harness.RESULTS:
        if entry.get("latency_s") is not None:
            rows.setdefault((entry["scenario"], f"{entry['driver']} {entry['version']}"), []).append(entry["latency_s"])
    for (scenario, cli), values in sorted(rows.items()):
        terminalreporter.write_line(
            f"  {scenario:<28} {cli:<16} n={len(values):<3} median={statistics.median(values):6.2f}"
            f"  max={max(values):6.2f}"
        )
    if harness.REPORT:
        terminalreporter.write_line(f"  (raw: {harness.REPORT})")

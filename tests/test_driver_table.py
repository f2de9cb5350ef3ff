"""The driver table (groupx_site/core/driver_table.py): every place that names a driver reads it."""

from __future__ import annotations

from pathlib import Path

from agents import instances
from agents.drivers import acp, claude, claude_session, codex, registry
from agents.drivers.acp import AcpDriver
from groupx_site.core.driver_table import DEFAULT_AGENT_IDS, DEMO_DRIVERS, DISPLAY_NAMES, DRIVER_NAMES, DRIVERS
from setup_wizard import config, starter

ROOT = Path(__file__).resolve().parent.parent


def test_the_names_orders_and_labels_are_those_groupx_used_before_the_table():
    # Spelled out once here: the table must not change what a config, a demo or a binding says.
    assert DRIVER_NAMES == config.DRIVERS == ("codex", "grok", "kimi", "hermes", "claude")
    assert DEFAULT_AGENT_IDS == ("codex", "grok", "kimi")
    assert DEMO_DRIVERS == ("kimi", "hermes", "grok", "codex", "claude")
    assert DISPLAY_NAMES == {"codex": "Codex", "grok": "Grok", "kimi": "Kimi", "hermes": "Hermes", "claude": "Claude"}
    assert {name: instances.protocol_label(name) for name in DRIVER_NAMES} == {
        "codex": "codex-app-server-stdio-jsonrpc-v2",
        "claude": "claude-cli-stream-json-v1",
        "kimi": "acp",
        "hermes": "acp",
        "grok": "acp",
    }


def test_every_demo_driver_has_its_fake_cli_shim():
    for name in DEMO_DRIVERS:
        assert (ROOT / "agents" / "fakes" / "bin" / name).is_file(), name
    assert [agent["driver"] for agent in starter.demo_agents(ROOT).values()] == list(DEMO_DRIVERS)


def test_each_driver_is_looked_up_by_its_protocol_and_launched_with_the_table_argv():
    assert registry.available_drivers() == tuple(sorted(DRIVER_NAMES))
    for name, spec in DRIVERS.items():
        driver = registry.get_driver(name)
        assert driver.name == name
        if spec.protocol == "acp":
            assert isinstance(driver, AcpDriver)
            assert acp.FLAVOR_ARGV[name] == spec.argv and acp.FLAVOR_MODE[name] == spec.mode
    assert DRIVERS["codex"].argv == codex.CODEX_ARGV
    assert claude.CLAUDE_ARGV[-2:] == ("--permission-mode", claude_session.PERMISSION_MODE)


def test_the_config_refuses_a_driver_the_table_does_not_know():
    errors = []
    try:
        config.parse_config({"agents": {"x": {"driver": "gemini", "cwd": "."}}})
    except config.ConfigError as error:
        errors.append(str(error))
    assert errors and "'codex', 'grok', 'kimi', 'hermes' or 'claude'" in errors[0]


def test_the_setup_snapshot_hands_the_wizard_the_driver_list(room):
    snapshot = room.get("/api/setup").json()

    assert snapshot["driverChoices"] == [
        {"name": name, "displayName": spec.display_name, "protocol": spec.protocol, "installHint": spec.install_hint}
        for name, spec in DRIVERS.items()
    ]

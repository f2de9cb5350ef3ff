"""The native CLI drivers GroupX knows, one row each (FEATURES §3, NATIVE_PROTOCOLS §2–§4).

Everything that names a driver reads this table: the config schema and its default roster
(``setup_wizard/config.py``), the wizard's driver list (the ``/api/setup`` snapshot), CLI detection,
the demo agents of a first run (``setup_wizard/starter.py``), the binding's protocol label
(``agents/instances.py``), the driver lookup (``agents/drivers/registry.py``) and each driver's
fixed argv and mode (``acp.py``, ``codex.py``, ``claude.py``).

Adding an ACP CLI: add a row here and a demo shim in ``agents/fakes/bin/`` (or ``demo_rank=None``).

Standard library only: the pure config layer and the Django-free drivers both import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Protocol = Literal["acp", "codex", "claude"]

# What a SessionBinding records as its ``protocol`` for each wire protocol (PROTOCOL §4).
PROTOCOL_LABELS: dict[str, str] = {
    "acp": "acp",
    "codex": "codex-app-server-stdio-jsonrpc-v2",
    "claude": "claude-cli-stream-json-v1",
}


@dataclass(frozen=True)
class DriverSpec:
    name: str  # the ``driver`` of an agent in groupx.json, and the executable looked up on PATH
    display_name: str
    protocol: Protocol
    argv: tuple[str, ...]  # appended after the agent's command, before anything per session
    # The unrestricted mode asked for after every start (ACP session/set_mode, Claude's permission
    # mode); None when there is nothing to set.
    mode: str | None
    default_roster: bool = False  # in the roster a groupx.json without ``agents`` gets
    # Place among the demo agents of a first run with no CLI installed (agents/fakes/bin/<name>);
    # the ACP ones come first, as they were listed before this table existed. None: no demo.
    demo_rank: int | None = None
    # ACP flavour quirks (NATIVE_PROTOCOLS §3): the agentInfo.name the CLI must report; whether it
    # advertises MCP over HTTP (Hermes reads HTTP descriptors without saying so); whether its
    # stderr may carry a managed-policy marker that stops the start (Grok).
    agent_name: str | None = None
    advertises_mcp_http: bool = True
    stderr_policy_markers: bool = False
    # How the CLI is usually installed, shown by /setup when it is not on PATH; only what the
    # conformance kit installs it from (docs/CONFORMANCE.md), else a pointer to the vendor.
    install_hint: str = ""


_ROWS = (
    DriverSpec(
        "codex",
        "Codex",
        "codex",
        ("--dangerously-bypass-hook-trust", "app-server", "--listen", "stdio://"),
        None,
        default_roster=True,
        demo_rank=3,
        install_hint="npm install -g @openai/codex",
    ),
    # Grok's global flags must come before the `agent stdio` subcommand.
    DriverSpec(
        "grok",
        "Grok",
        "acp",
        (
            "--no-auto-update",
            "--permission-mode",
            "bypassPermissions",
            "--sandbox",
            "off",
            "--no-plan",
            "agent",
            "stdio",
        ),
        None,
        default_roster=True,
        demo_rank=2,
        stderr_policy_markers=True,
        install_hint="see the vendor's documentation for the Grok CLI",
    ),
    DriverSpec(
        "kimi",
        "Kimi",
        "acp",
        ("acp",),
        "auto",
        default_roster=True,
        demo_rank=0,
        install_hint="npm install -g @moonshot-ai/kimi-code",
    ),
    DriverSpec(
        "hermes",
        "Hermes",
        "acp",
        ("--yolo", "acp"),
        "dont_ask",
        demo_rank=1,
        agent_name="hermes-agent",
        advertises_mcp_http=False,
        install_hint='pip install "hermes-agent[acp]" (in its own venv)',
    ),
    DriverSpec(
        "claude",
        "Claude",
        "claude",
        (
            "--print",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
            "--permission-mode",
            "bypassPermissions",
        ),
        "bypassPermissions",
        demo_rank=4,
        install_hint="npm install -g @anthropic-ai/claude-code",
    ),
)

DRIVERS: dict[str, DriverSpec] = {row.name: row for row in _ROWS}  # in the protocol's order
DRIVER_NAMES: tuple[str, ...] = tuple(DRIVERS)
DISPLAY_NAMES: dict[str, str] = {row.name: row.display_name for row in _ROWS}
DEFAULT_AGENT_IDS: tuple[str, ...] = tuple(row.name for row in _ROWS if row.default_roster)
DEMO_DRIVERS: tuple[str, ...] = tuple(
    row.name for row in sorted((r for r in _ROWS if r.demo_rank is not None), key=lambda r: r.demo_rank or 0)
)


def protocol_label(driver: str) -> str:
    """The binding's protocol for ``driver``; an unknown driver is recorded by its own name."""
    spec = DRIVERS.get(driver)
    return PROTOCOL_LABELS[spec.protocol] if spec else driver


def for_the_page() -> list[dict[str, str]]:
    """The wizard's driver choices (the ``/api/setup`` snapshot), so the page keeps no copy."""
    return [
        {"name": row.name, "displayName": row.display_name, "protocol": row.protocol, "installHint": row.install_hint}
        for row in _ROWS
    ]

"""``POST /api/setup/test-cli``: run one agent CLI's ``--version`` and its native handshake.

The handshake is the driver's own ``start`` (ACP ``initialize`` and ``session/new``, the Codex App
Server's ``initialize`` and ``thread/start``, Claude's stream-json init), with no MCP attachment,
followed at once by the session's close: the same start a Turn's session makes, so a pass here means
the runtime can start it. What runs is never named by the request: it is a configured agent's
command in ``groupx.json`` or the driver's CLI found on PATH (``detect.detect_drivers``).
A failed start already closes its child (``agents/drivers/native_start.py``); the whole probe is
bounded by the handshake timeout plus the close timeout, and a cancelled start closes it too.
"""

from __future__ import annotations

import asyncio
import secrets
import shutil
from pathlib import Path
from typing import Any

from asgiref.sync import sync_to_async
from django.utils.translation import gettext

from agents.drivers.base import PROTOCOL_HANDSHAKE_TIMEOUT, DriverError, LaunchProfile, Timeouts
from agents.drivers.registry import get_driver
from groupx_site.core.driver_table import DRIVERS
from groupx_site.core.errors import GroupXError, invalid
from setup_wizard.config import ResolvedAgent, load_config, resolve_agents, resolve_executable
from setup_wizard.detect import cli_version


def check_body(payload: Any) -> dict[str, str]:
    """Exactly one of ``agentId`` (an agent of groupx.json) or ``driver`` (a native driver's name)."""
    if not isinstance(payload, dict):
        raise invalid("the body must be a JSON object")
    unknown = sorted(set(payload) - {"agentId", "driver"})
    if unknown:
        raise invalid(f"unknown field(s): {', '.join(unknown)}", unknownFields=unknown)
    if len(payload) != 1:
        raise invalid("name exactly one of agentId or driver")
    key, value = next(iter(payload.items()))
    if not isinstance(value, str) or not 1 <= len(value) <= 64:
        raise invalid(f"{key} must be a string of 1 to 64 characters")
    if key == "driver" and value not in DRIVERS:
        raise invalid(f"unknown driver {value!r} (known: {', '.join(DRIVERS)})")
    return {key: value}


def configured_agent(config_path: Path, agent_id: str) -> ResolvedAgent:
    for agent in resolve_agents(load_config(config_path), config_path):
        if agent.agent_id == agent_id:
            return agent
    raise GroupXError(
        "UNKNOWN_ACTOR", f"no agent {agent_id!r} in {config_path.name}", status=404, details={"agentId": agent_id}
    )


async def probe_cli(config_path: Path, target: dict[str, str], timeouts: Timeouts) -> dict[str, Any]:
    """The result the page shows: found, version, handshake ok or its code and message."""
    if "agentId" in target:
        agent = await sync_to_async(configured_agent, thread_sensitive=False)(config_path, target["agentId"])
        if agent.ssh:
            return {
                "driver": agent.driver,
                "agentId": agent.agent_id,
                "found": True,
                "version": None,
                "handshake": {
                    "ok": False,
                    "code": "ADAPTER_START_FAILED",
                    "message": gettext("runs on %(host)s: `groupx doctor` checks it there") % {"host": agent.ssh},
                },
            }
        driver, cwd, command = agent.driver, agent.cwd, resolve_executable(agent.command)
        out: dict[str, Any] = {"driver": driver, "agentId": agent.agent_id}
    else:
        driver, cwd = target["driver"], str(config_path.parent)
        found = shutil.which(driver)
        command = (found,) if found else None
        out = {"driver": driver}
    if command is None:
        return {
            **out,
            "found": False,
            "version": None,
            "installHint": DRIVERS[driver].install_hint if driver in DRIVERS else "",
            "handshake": {
                "ok": False,
                "code": "ADAPTER_NOT_FOUND",
                "message": gettext("the command was not found on PATH"),
            },
        }
    version = await sync_to_async(cli_version, thread_sensitive=False)(command[0])
    return {
        **out,
        "found": True,
        "command": " ".join(command),
        "version": version,
        "handshake": await handshake(driver, command, cwd, timeouts),
    }


async def handshake(driver: str, command: tuple[str, ...], cwd: str, timeouts: Timeouts) -> dict[str, Any]:
    tag = secrets.token_hex(6)
    profile = LaunchProfile(
        agent_id=driver,
        actor_id=f"agent:{driver}",
        driver=driver,
        command=command,
        cwd=cwd,
        instance_id=f"{driver}/test-cli@{tag}",
        binding_id="",
        mcp=None,
        timeouts=timeouts,
    )
    # Each handshake step is bounded by handshake_ms already; this caps a start of several steps.
    bound = (timeouts.handshake_ms + timeouts.close_ms) / 1000
    try:
        session = await asyncio.wait_for(get_driver(driver).start(profile), bound)
    except TimeoutError:
        message = gettext("no start within %(seconds)s s") % {"seconds": f"{bound:g}"}
        return {"ok": False, "code": PROTOCOL_HANDSHAKE_TIMEOUT, "message": message}
    except DriverError as error:
        return {"ok": False, "code": error.code, "message": error.message}
    await session.close()
    return {"ok": True}

"""Claude Code driver: ``claude --print`` in stream-json mode (NATIVE_PROTOCOLS §4).

Launch: the fixed flags, then ``--mcp-config <file>`` when the GroupX MCP server is attached (the
JSON in a 0600 file for the session's life, never on argv: D39), then ``--session-id <new uuid4>``
or ``--resume <stored uuid>``. ``system/init`` only comes after the
first user message, so the handshake is two control requests, each bounded by ``handshake_ms``:
``initialize`` (its ``current_permission_mode`` is optional: Claude Code 2.1.197 no longer
sends it, docs/CONFORMANCE.md) and
``set_permission_mode bypassPermissions`` (refused or downgraded → ``NATIVE_POLICY_BLOCKED``).
Turns and close live in ``claude_session.py`` and ``claude_turn.py``.

Claude Code refuses bypassPermissions as root unless ``IS_SANDBOX=1`` (L1). GroupX never sets
that variable itself; the refusal becomes ``NATIVE_POLICY_BLOCKED`` with a hint, and an operator
who knows the machine is a sandbox can put it in the agent's environment.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from groupx_site.core.driver_table import DRIVERS

from .base import (
    ADAPTER_START_FAILED,
    NATIVE_POLICY_BLOCKED,
    PROTOCOL_INVALID_MESSAGE,
    SESSION_NOT_AVAILABLE,
    Driver,
    DriverError,
    LaunchProfile,
    NativeSession,
)
from .claude_session import PERMISSION_MODE, ClaudeSession, ControlRefused
from .jsonrpc import ConnectionLost
from .native_start import handshake_answer, lost_during_start, require_mcp_binding, start_native_session
from .process import CLAUDE_LINE_LIMIT
from .secret_file import SecretFile
from .turnkit import short

CLAUDE_ARGV = DRIVERS["claude"].argv  # ends with --permission-mode PERMISSION_MODE
MCP_CONFIG_NAME = "claude-mcp.json"
ROOT_REFUSAL = "cannot be used with root/sudo privileges"
UNKNOWN_SESSION = "No conversation found with session ID"
ROOT_HINT = (
    "Claude Code refuses bypassPermissions as root. GroupX never sets IS_SANDBOX=1 itself: on a "
    "disposable sandbox start GroupX with IS_SANDBOX=1 in its environment (or point this agent's "
    "command at a wrapper script that sets it); otherwise run GroupX as an unprivileged user"
)


def mcp_config(profile: LaunchProfile) -> str | None:
    """The ``--mcp-config`` JSON; merged with the user's own servers (no --strict-mcp-config)."""
    if profile.mcp is None:
        return None
    server = {"type": "http", "url": profile.mcp.url, "headers": {"X-GroupX-Binding": profile.mcp.binding_id}}
    return json.dumps({"mcpServers": {"groupx": server}}, separators=(",", ":"))


def mcp_config_file(profile: LaunchProfile) -> SecretFile | None:
    """The config holds the binding, so it goes in a file only this OS user can read (D39)."""
    config = mcp_config(profile)
    return None if config is None else SecretFile(MCP_CONFIG_NAME, config, parent=profile.private_dir)


def claude_argv(profile: LaunchProfile, session_id: str, *, resume: bool, mcp_config_path: str | None) -> list[str]:
    argv = [*profile.command, *CLAUDE_ARGV]
    if mcp_config_path is not None:
        argv += ["--mcp-config", mcp_config_path]  # Claude Code takes a file path or inline JSON
    argv += ["--resume" if resume else "--session-id", session_id]
    return argv


def _valid_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


class ClaudeDriver(Driver):
    name = "claude"

    async def start(self, profile: LaunchProfile, *, resume_native_session_id: str | None = None) -> NativeSession:
        require_mcp_binding(profile)
        resume = resume_native_session_id is not None
        if resume_native_session_id is not None and not _valid_uuid(resume_native_session_id):
            raise DriverError(SESSION_NOT_AVAILABLE, f"{resume_native_session_id!r} is not a Claude session id")
        # A fresh UUID for every start: an id that already has a transcript is refused (L2).
        session_id = resume_native_session_id if resume_native_session_id is not None else str(uuid.uuid4())
        session = ClaudeSession(profile, session_id, resuming=resume)
        session.secret_file = config_file = mcp_config_file(profile)  # removed when the session closes
        argv = claude_argv(
            profile, session_id, resume=resume, mcp_config_path=config_file.path if config_file else None
        )
        try:
            return await start_native_session(
                session,
                argv,
                profile,
                _Handshake(session, profile).run,
                label="claude",
                line_limit=CLAUDE_LINE_LIMIT,
                secrets=[config_file] if config_file is not None else [],
            )
        except BaseException:
            if config_file is not None:
                config_file.remove()  # a CLI that could not even be launched leaves no session to close
            raise


class _Handshake:
    def __init__(self, session: ClaudeSession, profile: LaunchProfile):
        self.session = session
        self.step_timeout = profile.timeouts.handshake_ms / 1000

    async def run(self) -> None:
        session = self.session
        init = await self.step("initialize", {"hooks": None})
        if not isinstance(init, dict):
            raise DriverError(PROTOCOL_INVALID_MESSAGE, f"initialize answered {init!r:.200}")
        # Projected fields only: the rest holds account and model inventories that are never logged.
        mode, pid, version = init.get("current_permission_mode"), init.get("pid"), init.get("claude_code_version")
        session.initial_permission_mode = mode if isinstance(mode, str) else None
        session.cli_pid = pid if isinstance(pid, int) else None
        session.cli_version = short(version)
        result = await self.step("set_permission_mode", {"mode": PERMISSION_MODE})
        granted = result.get("mode") if isinstance(result, dict) else None
        if granted != PERMISSION_MODE:
            raise DriverError(
                NATIVE_POLICY_BLOCKED,
                f"Claude Code answered set_permission_mode with mode {granted!r}, not {PERMISSION_MODE!r}",
                retryable=False,
            )
        session.started()

    async def step(self, subtype: str, fields: dict[str, Any]) -> Any:
        session = self.session
        answer = await handshake_answer(
            subtype,
            lambda: session.control(subtype, fields),
            fatal=session.start_fatal,
            timeout=self.step_timeout,
            lost=self.lost,
        )
        try:
            return answer.result()
        except ControlRefused as exc:
            raise await self.refused(subtype, exc) from exc
        except ConnectionLost as exc:
            raise await self.lost(subtype, exc) from exc

    async def refused(self, subtype: str, exc: ControlRefused) -> DriverError:
        detail = f"Claude Code refused {subtype}: {short(exc.error, 500)}"
        if exc.error_code:
            detail += f" ({exc.error_code})"
        if subtype == "set_permission_mode":
            if ROOT_REFUSAL in exc.error:
                detail = f"{ROOT_HINT}. {detail}"  # first: the room shows the first 500 characters
            return DriverError(NATIVE_POLICY_BLOCKED, detail, retryable=False)
        return DriverError(ADAPTER_START_FAILED, detail)

    async def lost(self, subtype: str, exc: ConnectionLost) -> DriverError:
        session = self.session
        error, tail = await lost_during_start(session.process, "claude", subtype, exc)
        if error.code != ADAPTER_START_FAILED:
            return error  # garbage on the wire, not an exit
        if ROOT_REFUSAL in tail:
            return DriverError(NATIVE_POLICY_BLOCKED, f"{ROOT_HINT}. {error.message}", retryable=False)
        startup = session.startup_result or {}
        if session.resuming and (UNKNOWN_SESSION in tail or startup.get("num_turns") == 0):
            # L3/L11: the stored session is gone (or never got a prompt); the manager starts fresh.
            return DriverError(SESSION_NOT_AVAILABLE, error.message)
        return error

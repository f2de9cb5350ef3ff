"""ACP v1 driver for Grok, Kimi and Hermes (NATIVE_PROTOCOLS §3).

All three share this kernel; they differ in argv, in the mode set after every new/load, in the
MCP-over-HTTP capability gate and (Grok only) in stderr policy markers. ``generic`` is the
flavour of the fake agent used by kernel tests.

Start sequence: ``initialize`` (no ``initialized`` notification: that is Codex/MCP, not ACP),
then ``session/new`` or ``session/load``, then ``session/set_mode``. Each step is bounded by
``handshake_ms``. Turns and close live in ``acp_session.py``.
"""

from __future__ import annotations

from typing import Any

from groupx_site.core.driver_table import DRIVERS, DriverSpec

from .acp_policy import has_policy_evidence
from .acp_session import AcpSession
from .base import (
    ADAPTER_START_FAILED,
    NATIVE_POLICY_BLOCKED,
    NATIVE_RESUME_UNSUPPORTED,
    PROTOCOL_INVALID_MESSAGE,
    SESSION_NOT_AVAILABLE,
    Driver,
    DriverError,
    LaunchProfile,
    NativeSession,
)
from .jsonrpc import JsonRpcError
from .native_start import RpcHandshake, require_mcp_binding, start_native_session

# The ACP rows of the driver table, plus ``generic``: the fake agent the kernel tests drive.
FLAVORS: dict[str, DriverSpec] = {
    **{name: spec for name, spec in DRIVERS.items() if spec.protocol == "acp"},
    "generic": DriverSpec("generic", "Generic ACP", "acp", ("--flavor", "generic"), None),
}
FLAVOR_ARGV: dict[str, tuple[str, ...]] = {name: spec.argv for name, spec in FLAVORS.items()}
# The unrestricted mode set after every session/new and session/load (§1.9); None: no call.
FLAVOR_MODE: dict[str, str | None] = {name: spec.mode for name, spec in FLAVORS.items()}
ACP_PROTOCOL_VERSION = 1
CLIENT_INFO = {"name": "groupx", "title": "GroupX", "version": "0.1.0"}


def mcp_servers(profile: LaunchProfile) -> list[dict[str, Any]]:
    """The GroupX member endpoint as an ACP HTTP descriptor, on every session/new and load."""
    if profile.mcp is None:
        return []
    return [
        {
            "type": "http",
            "name": "groupx",
            "url": profile.mcp.url,
            "headers": [{"name": "X-GroupX-Binding", "value": profile.mcp.binding_id}],
        }
    ]


def _is_auth_required(error: JsonRpcError) -> bool:
    # A1: real Grok and Kimi answer session/new with -32000 "Authentication required" offline.
    return error.code == -32000 and "auth" in error.message.lower()


class AcpDriver(Driver):
    def __init__(self, flavor: str):
        if flavor not in FLAVOR_ARGV:
            raise ValueError(f"unknown ACP flavour {flavor!r}")
        self.name = flavor
        self.flavor = flavor

    async def start(self, profile: LaunchProfile, *, resume_native_session_id: str | None = None) -> NativeSession:
        require_mcp_binding(profile)
        session = AcpSession(self.flavor, profile)
        handshake = _Handshake(session, profile, resume_native_session_id)
        return await start_native_session(
            session,
            [*profile.command, *FLAVOR_ARGV[self.flavor]],
            profile,
            handshake.run,
            label=self.flavor,
            on_stderr=session._on_stderr,
        )


class _Handshake(RpcHandshake):
    def __init__(self, session: AcpSession, profile: LaunchProfile, resume_id: str | None):
        super().__init__(session, profile, resume_id, label=session.flavor, fatal=session.start_fatal)
        self.session = session
        # During a resume, a refused step means "this session is gone", so the manager starts fresh.
        self.refused_code = SESSION_NOT_AVAILABLE if resume_id else ADAPTER_START_FAILED

    async def run(self) -> None:
        session = self.session
        init = await self.step(
            "initialize",
            {"protocolVersion": ACP_PROTOCOL_VERSION, "clientCapabilities": {}, "clientInfo": CLIENT_INFO},
            refused=ADAPTER_START_FAILED,
        )
        self.check_initialize(init)
        self.check_fatal()  # a Grok policy marker stops the start before session/new
        servers = mcp_servers(self.profile)
        if self.resume_id is not None:
            if session.agent_capabilities.get("loadSession") is not True:
                raise DriverError(NATIVE_RESUME_UNSUPPORTED, f"{session.flavor} does not support session/load")
            session.native_session_id = self.resume_id
            session.set_loading(True)  # replayed history is buffered, never emitted
            try:
                # Bounded by handshake_ms of silence: a long history replays for as long as it takes.
                await self.step(
                    "session/load",
                    {"sessionId": self.resume_id, "cwd": self.profile.cwd, "mcpServers": servers},
                    refused=SESSION_NOT_AVAILABLE,
                    progress=lambda: session.replayed,
                )
            finally:
                session.set_loading(False)
        else:
            result = await self.step(
                "session/new", {"cwd": self.profile.cwd, "mcpServers": servers}, refused=ADAPTER_START_FAILED
            )
            session_id = result.get("sessionId") if isinstance(result, dict) else None
            if not isinstance(session_id, str) or not session_id:
                raise DriverError(PROTOCOL_INVALID_MESSAGE, f"session/new returned no sessionId: {result!r:.200}")
            session.native_session_id = session_id
        await self.set_mode()
        self.check_fatal()
        session.started(resumed=self.resume_id is not None)

    def check_initialize(self, result: Any) -> None:
        session = self.session
        if not isinstance(result, dict):
            raise DriverError(PROTOCOL_INVALID_MESSAGE, f"initialize returned {result!r:.200}")
        version = result.get("protocolVersion")
        if version != ACP_PROTOCOL_VERSION or isinstance(version, bool):
            raise DriverError(PROTOCOL_INVALID_MESSAGE, f"unsupported ACP protocol version {version!r}")
        caps = result.get("agentCapabilities")
        if not isinstance(caps, dict):
            raise DriverError(PROTOCOL_INVALID_MESSAGE, "initialize result has no agentCapabilities object")
        info = result.get("agentInfo")
        session.agent_capabilities = caps
        session.agent_info = info if isinstance(info, dict) else {}
        spec = FLAVORS[session.flavor]
        if spec.agent_name is not None and session.agent_info.get("name") != spec.agent_name:
            # Another CLI behind the configured command: it answers the same at every attempt, so
            # the start fails at once and says so (docs/DECISIONS.md D38), never retried.
            raise DriverError(
                ADAPTER_START_FAILED,
                f"the {session.flavor} driver needs agentInfo.name {spec.agent_name!r}, but the "
                f"command answered initialize as {session.agent_info.get('name')!r}",
                retryable=False,
            )
        if self.profile.mcp is not None and spec.advertises_mcp_http:
            # Hermes omits mcpCapabilities but reads HTTP descriptors, so it is forced on (§3.8).
            mcp_caps = caps.get("mcpCapabilities")
            if not (isinstance(mcp_caps, dict) and mcp_caps.get("http") is True):
                raise DriverError(
                    ADAPTER_START_FAILED,
                    f"{session.flavor} does not advertise MCP over HTTP (mcpCapabilities.http), "
                    "so the GroupX tools cannot be attached",
                )

    async def set_mode(self) -> None:
        mode = FLAVOR_MODE[self.session.flavor]
        if mode is None:
            return
        result = await self.step(
            "session/set_mode", {"sessionId": self.session.native_session_id, "modeId": mode}, refused=self.refused_code
        )
        if not isinstance(result, dict):
            raise DriverError(
                ADAPTER_START_FAILED, f"session/set_mode {mode!r} returned {result!r:.100}, not an object"
            )

    def refusal(self, method: str, error: JsonRpcError, code: str) -> DriverError:
        detail = f"{method} failed: {error.code} {error.message}"
        if has_policy_evidence(error.data):
            return DriverError(NATIVE_POLICY_BLOCKED, detail, retryable=False)
        if _is_auth_required(error):
            cmd = self.profile.command[-1] if self.profile.command else self.session.flavor
            return DriverError(
                ADAPTER_START_FAILED,
                f"{self.session.flavor} is not logged in ({error.message}); "
                f"log in once with the CLI itself ({cmd!r}) and restart the agent",
                retryable=False,
            )
        if method == "session/set_mode":
            # The agent answered and said no: asking again the same way cannot change the answer.
            return DriverError(code, detail, retryable=False)
        return DriverError(code, detail)

"""Codex driver: ``codex app-server`` over stdio JSON-RPC (NATIVE_PROTOCOLS §2).

Start sequence, each step bounded by ``handshake_ms``: ``initialize`` → the ``initialized``
notification (once, only after the initialize result) → ``configRequirements/read`` (the policy
preflight) → ``thread/start``, or ``thread/resume`` (``excludeTurns``) for a stored thread id followed
by one bounded ``thread/turns/list`` page. Unrestricted access is
requested on every thread start/resume (``approvalPolicy: never``, ``sandbox: danger-full-access``)
and the GroupX MCP server travels as a thread-scoped config override. Turns and close live in
``codex_session.py`` and ``codex_turn.py``.
"""

from __future__ import annotations

import logging
from typing import Any

from groupx_site.core.driver_table import DRIVERS

from .acp_policy import has_policy_evidence
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
from .codex_session import CodexSession
from .jsonrpc import INVALID_REQUEST, METHOD_NOT_FOUND, JsonRpcError
from .native_start import RpcHandshake, require_mcp_binding, start_native_session
from .turnkit import same_path

log = logging.getLogger(__name__)

# From the driver table; its global flag comes before the `app-server` subcommand (§2.1).
CODEX_ARGV = DRIVERS["codex"].argv
CLIENT_INFO = {"name": "groupx", "title": "GroupX", "version": "0.1.0"}
# Every real transcript (codex 0.169) opts in to the experimental API; the TS reference did not,
# and 0.163 accepted the thread config either way. Opting in keeps us on the surface proven live.
CLIENT_CAPABILITIES = {"experimentalApi": True}
APPROVAL_POLICY = "never"
SANDBOX_MODE = "danger-full-access"  # kebab case in thread params; responses say dangerFullAccess (C7)
# The policy preflight; older builds do not know it, which means there is nothing to check.
REQUIREMENTS_METHOD = "configRequirements/read"
# A resume asks for the thread without its turns (`excludeTurns`): the whole history in one JSON
# line passes the 1 MiB line limit after a few hundred turns, and 0.169 deprecates it. What GroupX
# needs of the history, the newest turn, comes from one bounded page of the paginated read.
TURNS_METHOD = "thread/turns/list"
NEWEST_TURN_PAGE = {"limit": 1, "sortDirection": "desc", "itemsView": "notLoaded"}


def thread_params(profile: LaunchProfile) -> dict[str, Any]:
    """The unrestricted policy and the GroupX MCP server, sent on every thread start and resume."""
    params: dict[str, Any] = {"approvalPolicy": APPROVAL_POLICY, "sandbox": SANDBOX_MODE}
    if profile.mcp is not None:
        # The key is the dotted string itself: a thread-scoped override, no config file written (§2.2).
        params["config"] = {
            "mcp_servers.groupx": {"url": profile.mcp.url, "http_headers": {"X-GroupX-Binding": profile.mcp.binding_id}}
        }
    return params


def check_requirements(result: Any) -> None:
    """configRequirements/read: null means no constraint; an allowlist without the unrestricted
    value is a managed policy (NATIVE_POLICY_BLOCKED); any other shape is a protocol error."""
    if not isinstance(result, dict):
        raise DriverError(PROTOCOL_INVALID_MESSAGE, f"configRequirements/read returned {result!r:.200}")
    requirements = result.get("requirements")
    if requirements is None:
        return
    if not isinstance(requirements, dict):
        raise DriverError(PROTOCOL_INVALID_MESSAGE, f"malformed config requirements: {requirements!r:.200}")
    for key, needed in (("allowedApprovalPolicies", APPROVAL_POLICY), ("allowedSandboxModes", SANDBOX_MODE)):
        allowed = requirements.get(key)
        if allowed is None:
            continue
        # Entries are strings or objects such as {"granular": {…}}, which may sit beside "never".
        if not isinstance(allowed, list) or not all(isinstance(entry, str | dict) for entry in allowed):
            raise DriverError(PROTOCOL_INVALID_MESSAGE, f"malformed {key}: {allowed!r:.200}")
        if needed not in allowed:
            raise DriverError(
                NATIVE_POLICY_BLOCKED,
                f"a managed Codex policy allows {key} {allowed!r:.200}, not {needed!r}; GroupX "
                "runs Codex unrestricted and cannot start it under this policy",
                retryable=False,
            )


def _unknown_method(error: JsonRpcError) -> bool:
    # C3: codex answers unknown methods with -32600 "unknown variant", not -32601.
    return error.code == METHOD_NOT_FOUND or (error.code == INVALID_REQUEST and "unknown variant" in error.message)


class CodexDriver(Driver):
    name = "codex"

    async def start(self, profile: LaunchProfile, *, resume_native_session_id: str | None = None) -> NativeSession:
        require_mcp_binding(profile)
        session = CodexSession(profile)
        handshake = _Handshake(session, profile, resume_native_session_id)
        return await start_native_session(
            session, [*profile.command, *CODEX_ARGV], profile, handshake.run, label="codex"
        )


class _Handshake(RpcHandshake):
    def __init__(self, session: CodexSession, profile: LaunchProfile, resume_id: str | None):
        super().__init__(session, profile, resume_id, label="codex", fatal=session.start_fatal)
        self.session = session

    async def run(self) -> None:
        session = self.session
        init = await self.step(
            "initialize", {"clientInfo": CLIENT_INFO, "capabilities": CLIENT_CAPABILITIES}, refused=ADAPTER_START_FAILED
        )
        if not isinstance(init, dict):
            raise DriverError(PROTOCOL_INVALID_MESSAGE, f"initialize returned {init!r:.200}")
        await self.notify("initialized")
        requirements = await self.step(REQUIREMENTS_METHOD, {}, refused=ADAPTER_START_FAILED)
        if requirements is not None:
            check_requirements(requirements)
        params = thread_params(self.profile)
        if self.resume_id is not None:
            # "no rollout found" (C2: a thread that never ran a turn) or any other refusal: the
            # session manager starts fresh.
            result = await self.step(
                "thread/resume",
                {"threadId": self.resume_id, "excludeTurns": True, **params},
                refused=SESSION_NOT_AVAILABLE,
            )
        else:
            result = await self.step("thread/start", params, refused=ADAPTER_START_FAILED)
        thread_id = self.check_thread(result)
        session.set_thread(thread_id)
        if self.resume_id is not None:
            await self.read_newest_turn(thread_id)
        session.started(resumed=self.resume_id is not None)

    def check_thread(self, result: Any) -> str:
        method = "thread/resume" if self.resume_id else "thread/start"
        thread = result.get("thread") if isinstance(result, dict) else None
        thread_id = thread.get("id") if isinstance(thread, dict) else None
        if not isinstance(thread_id, str) or not thread_id:
            raise DriverError(PROTOCOL_INVALID_MESSAGE, f"{method} returned no thread id: {result!r:.200}")
        assert isinstance(thread, dict) and isinstance(result, dict)
        cwd = thread.get("cwd", result.get("cwd"))
        if not isinstance(cwd, str) or not cwd:
            raise DriverError(PROTOCOL_INVALID_MESSAGE, f"{method} returned no thread cwd")
        if self.resume_id is not None and thread_id != self.resume_id:
            raise DriverError(
                SESSION_NOT_AVAILABLE, f"thread/resume of {self.resume_id} answered with thread {thread_id}"
            )
        if not same_path(cwd, self.profile.cwd):
            raise DriverError(
                ADAPTER_START_FAILED, f"codex opened the thread in {cwd!r}, not in the agent's cwd {self.profile.cwd!r}"
            )
        return thread_id

    async def read_newest_turn(self, thread_id: str) -> None:
        """The resumed thread's newest turn, from one page of ``thread/turns/list``: a late frame of
        it (the previous process's last turn) is dropped, never taken for the next turn's."""
        page = await self.step(TURNS_METHOD, {"threadId": thread_id, **NEWEST_TURN_PAGE}, refused=SESSION_NOT_AVAILABLE)
        if page is None:
            return  # refused: the thread is resumed all the same
        turns = page.get("data") if isinstance(page, dict) else None
        if not isinstance(turns, list) or not all(isinstance(turn, dict) for turn in turns):
            raise DriverError(PROTOCOL_INVALID_MESSAGE, f"{TURNS_METHOD} returned {page!r:.200}")
        newest = turns[0].get("id") if turns else None
        if isinstance(newest, str) and newest:
            self.session.forget_turn_id(newest)
        log.info("codex resumed thread %s; its newest turn: %s", thread_id, newest or "none")

    def refusal(self, method: str, error: JsonRpcError, refused: str) -> DriverError | None:
        if method == REQUIREMENTS_METHOD and _unknown_method(error):
            log.info("codex does not know %s (%s); no requirements to check", method, error.message)
            return None
        if method == TURNS_METHOD:
            # An aid, not a condition: the thread is resumed, only its newest turn is unknown.
            log.info("codex refused %s (%s %s); resumed without it", method, error.code, error.message)
            return None
        detail = f"{method} failed: {error.code} {error.message}"
        if has_policy_evidence(error.data):
            return DriverError(NATIVE_POLICY_BLOCKED, detail, retryable=False)
        return DriverError(refused, detail)

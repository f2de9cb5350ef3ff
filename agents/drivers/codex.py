"""Codex driver: ``codex app-server`` over stdio JSON-RPC (NATIVE_PROTOCOLS §2).

Start sequence, each step bounded by ``handshake_ms``: ``initialize`` → the ``initialized``
notification (once, only after the initialize result) → ``configRequirements/read`` (the policy
preflight) → ``thread/start``, or ``thread/resume`` for a stored thread id. Unrestricted access is
requested on every thread start/resume (``approvalPolicy: never``, ``sandbox: danger-full-access``)
and the GroupX MCP server travels as a thread-scoped config override. Turns and close live in
``codex_session.py`` and ``codex_turn.py``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from .acp_policy import has_policy_evidence
from .base import (
    ADAPTER_START_FAILED,
    MCP_BINDING_MISMATCH,
    NATIVE_POLICY_BLOCKED,
    PROTOCOL_HANDSHAKE_TIMEOUT,
    PROTOCOL_INVALID_MESSAGE,
    SESSION_NOT_AVAILABLE,
    Driver,
    DriverError,
    LaunchProfile,
    NativeSession,
)
from .codex_session import CodexSession
from .jsonrpc import INVALID_REQUEST, METHOD_NOT_FOUND, ConnectionLost, JsonRpcError, ProtocolViolation
from .process import JsonLineProcess
from .turnkit import launch_env, same_path, stderr_excerpt

log = logging.getLogger(__name__)

# The global flag must come before the `app-server` subcommand (§2.1).
CODEX_ARGV = ("--dangerously-bypass-hook-trust", "app-server", "--listen", "stdio://")
CLIENT_INFO = {"name": "groupx", "title": "GroupX", "version": "0.1.0"}
# Every real transcript (codex 0.169) opts in to the experimental API; the TS reference did not,
# and 0.163 accepted the thread config either way. Opting in keeps us on the surface proven live.
CLIENT_CAPABILITIES = {"experimentalApi": True}
APPROVAL_POLICY = "never"
SANDBOX_MODE = "danger-full-access"  # kebab case in thread params; responses say dangerFullAccess (C7)


def thread_params(profile: LaunchProfile) -> dict[str, Any]:
    """The unrestricted policy and the GroupX MCP server, sent on every thread start and resume."""
    params: dict[str, Any] = {"approvalPolicy": APPROVAL_POLICY, "sandbox": SANDBOX_MODE}
    if profile.mcp is not None:
        # The key is the dotted string itself: a thread-scoped override, no config file written (§2.2).
        params["config"] = {"mcp_servers.groupx": {
            "url": profile.mcp.url, "http_headers": {"X-GroupX-Binding": profile.mcp.binding_id}}}
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
            raise DriverError(NATIVE_POLICY_BLOCKED,
                              f"a managed Codex policy allows {key} {allowed!r:.200}, not {needed!r}; GroupX "
                              "runs Codex unrestricted and cannot start it under this policy", retryable=False)


def _unknown_method(error: JsonRpcError) -> bool:
    # C3: codex answers unknown methods with -32600 "unknown variant", not -32601.
    return error.code == METHOD_NOT_FOUND or (error.code == INVALID_REQUEST and "unknown variant" in error.message)


class CodexDriver(Driver):
    name = "codex"

    async def start(self, profile: LaunchProfile, *, resume_native_session_id: str | None = None) -> NativeSession:
        if profile.mcp is not None and not profile.mcp.binding_id:
            raise DriverError(MCP_BINDING_MISMATCH, "an MCP attachment needs a binding id", retryable=False)
        argv = [*profile.command, *CODEX_ARGV]
        session = CodexSession(profile)
        try:
            process = await JsonLineProcess.spawn(argv, cwd=profile.cwd, env=launch_env(profile))
        except OSError as exc:
            raise DriverError(ADAPTER_START_FAILED, f"cannot launch {argv[0]!r}: {exc}") from exc
        session.attach(process)
        try:
            await _Handshake(session, profile, resume_native_session_id).run()
        except BaseException:
            await _abort(session)
            raise
        return session


async def _abort(session: CodexSession) -> None:
    """Close a session whose start failed, after letting owed replies go out."""
    if session.client is not None:
        await session.client.drain_replies(1.0)
    try:
        await session.close()
    except Exception:
        log.exception("closing a failed codex start")


class _Handshake:
    def __init__(self, session: CodexSession, profile: LaunchProfile, resume_id: str | None):
        self.session = session
        self.profile = profile
        self.resume_id = resume_id
        self.step_timeout = profile.timeouts.handshake_ms / 1000

    async def run(self) -> None:
        session = self.session
        init = await self.step("initialize", {"clientInfo": CLIENT_INFO, "capabilities": CLIENT_CAPABILITIES},
                               refused=ADAPTER_START_FAILED)
        if not isinstance(init, dict):
            raise DriverError(PROTOCOL_INVALID_MESSAGE, f"initialize returned {init!r:.200}")
        await self.notify("initialized")
        requirements = await self.step("configRequirements/read", {}, refused=ADAPTER_START_FAILED,
                                       tolerate_unknown=True)
        if requirements is not None:
            check_requirements(requirements)
        params = thread_params(self.profile)
        if self.resume_id is not None:
            # "no rollout found" (C2: a thread that never ran a turn) or any other refusal: the
            # session manager starts fresh.
            result = await self.step("thread/resume", {"threadId": self.resume_id, **params},
                                     refused=SESSION_NOT_AVAILABLE)
        else:
            result = await self.step("thread/start", params, refused=ADAPTER_START_FAILED)
        thread_id = self.check_thread(result)
        session.set_thread(thread_id)
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
            raise DriverError(SESSION_NOT_AVAILABLE,
                              f"thread/resume of {self.resume_id} answered with thread {thread_id}")
        if not same_path(cwd, self.profile.cwd):
            raise DriverError(ADAPTER_START_FAILED,
                              f"codex opened the thread in {cwd!r}, not in the agent's cwd {self.profile.cwd!r}")
        return thread_id

    async def notify(self, method: str) -> None:
        assert self.session.client is not None
        try:
            # Sent without params, as the real clients do; the method alone is the notification.
            await asyncio.wait_for(self.session.client.notify(method), self.step_timeout)
        except TimeoutError:
            raise DriverError(PROTOCOL_HANDSHAKE_TIMEOUT, f"could not write {method}") from None
        except ConnectionLost as exc:
            raise await self.lost(method, exc) from exc

    async def step(self, method: str, params: dict[str, Any], *, refused: str, tolerate_unknown: bool = False) -> Any:
        """One handshake request, raced against a start-time interaction and ``handshake_ms``."""
        session = self.session
        assert session.client is not None
        fatal = session.start_fatal
        if fatal.done():
            raise fatal.result()
        try:
            pending = await asyncio.wait_for(session.client.send_request(method, params), self.step_timeout)
        except TimeoutError:
            raise DriverError(PROTOCOL_HANDSHAKE_TIMEOUT, f"could not write {method} within "
                                                          f"{self.step_timeout:g} s") from None
        except ConnectionLost as exc:
            raise await self.lost(method, exc) from exc
        await asyncio.wait({pending.future, fatal}, timeout=self.step_timeout, return_when=asyncio.FIRST_COMPLETED)
        if fatal.done():
            pending.forget()
            raise fatal.result()
        if not pending.done():
            pending.forget()
            raise DriverError(PROTOCOL_HANDSHAKE_TIMEOUT, f"{method} got no response within {self.step_timeout:g} s")
        try:
            return pending.future.result()
        except JsonRpcError as exc:
            if tolerate_unknown and _unknown_method(exc):
                log.info("codex does not know %s (%s); no requirements to check", method, exc.message)
                return None
            detail = f"{method} failed: {exc.code} {exc.message}"
            if has_policy_evidence(exc.data):
                raise DriverError(NATIVE_POLICY_BLOCKED, detail, retryable=False) from exc
            raise DriverError(refused, detail) from exc
        except ConnectionLost as exc:
            raise await self.lost(method, exc) from exc

    async def lost(self, method: str, exc: ConnectionLost) -> DriverError:
        if isinstance(exc, ProtocolViolation):
            return DriverError(PROTOCOL_INVALID_MESSAGE, f"during {method}: {exc}")
        tail = await stderr_excerpt(self.session.process)
        return DriverError(ADAPTER_START_FAILED, f"codex exited during {method}: {exc}"
                                                 + (f"; stderr: {tail}" if tail else ""))

"""Starting a native session, the one way all three protocols do it.

``start_native_session`` is the path every driver's ``start`` ends in: spawn the CLI, attach the
session to it, run the driver's own handshake, and close the child again if anything in that
fails, so a failed start never leaves a process behind. ``RpcHandshake`` is the step plumbing
the two JSON-RPC protocols (ACP and the Codex App Server) share: each request is written and
answered within ``handshake_ms`` and raced against start-fatal evidence (a native interaction,
a policy marker). What a refusal means stays with each driver (``RpcHandshake.refusal``).
"""

from __future__ import annotations

import abc
import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

from . import remote
from .base import (
    ADAPTER_START_FAILED,
    MCP_BINDING_MISMATCH,
    PROTOCOL_HANDSHAKE_TIMEOUT,
    PROTOCOL_INVALID_MESSAGE,
    DriverError,
    LaunchProfile,
)
from .jsonrpc import ConnectionLost, JsonRpcClient, JsonRpcError, PendingRequest, ProtocolViolation
from .process import JsonLineProcess, ProcessClosedError
from .secret_file import SecretFile
from .turnkit import launch_env, stderr_excerpt

log = logging.getLogger(__name__)

# How long owed replies to the CLI's start-time requests may take to go out before the close.
OWED_REPLIES_S = 1.0


class StartingSession(Protocol):
    def attach(self, process: JsonLineProcess) -> Any: ...

    async def close(self) -> None: ...


SessionT = TypeVar("SessionT", bound=StartingSession)


def require_mcp_binding(profile: LaunchProfile) -> None:
    """An MCP attachment without a binding id could not be told apart from another member's."""
    if profile.mcp is not None and not profile.mcp.binding_id:
        raise DriverError(MCP_BINDING_MISMATCH, "an MCP attachment needs a binding id", retryable=False)


async def start_native_session(
    session: SessionT,
    argv: list[str],
    profile: LaunchProfile,
    handshake: Callable[[], Awaitable[None]],
    *,
    label: str,
    secrets: Sequence[SecretFile] = (),
    **spawn_options: Any,
) -> SessionT:
    """Spawn ``argv`` in the agent's cwd and environment, attach ``session`` and run ``handshake``.
    ``secrets`` are the files ``argv`` names; on a remote agent they travel through ssh's stdin.
    A child that cannot be launched is ``ADAPTER_START_FAILED``; whatever the handshake raises
    (including a cancellation) is re-raised after the child was closed."""
    try:
        process = await _spawn(argv, profile, secrets, **spawn_options)
    except OSError as exc:
        raise DriverError(ADAPTER_START_FAILED, f"cannot launch {argv[0]!r}: {exc}") from exc
    session.attach(process)
    try:
        await handshake()
    except BaseException:
        await _abort(session, label)
        raise
    return session


async def _spawn(
    argv: list[str], profile: LaunchProfile, secrets: Sequence[SecretFile], **spawn_options: Any
) -> JsonLineProcess:
    """The one place an agent's argv becomes a process: here, or on its SSH destination (D51)."""
    if profile.ssh is None:
        return await JsonLineProcess.spawn(argv, cwd=profile.cwd, env=launch_env(profile), **spawn_options)
    named = [(secret.path, secret.name) for secret in secrets]
    ssh_argv = remote.wrap(argv, profile.cwd, profile.ssh, named)
    process = await JsonLineProcess.spawn(ssh_argv, env=launch_env(profile), **spawn_options)
    if secrets:
        try:
            await process.write_preamble(remote.preamble([secret.read() for secret in secrets]))
        except BaseException as exc:
            await process.close(0)
            if isinstance(exc, ProcessClosedError):
                raise OSError(f"ssh took no secret on its stdin: {exc}") from exc
            raise
    return process


async def _abort(session: StartingSession, label: str) -> None:
    """Close a session whose start failed, after letting owed replies and cancels go out."""
    # Only the JSON-RPC sessions have a client; Claude's own close waits for its owed answers.
    client: JsonRpcClient | None = getattr(session, "client", None)
    if client is not None:
        await client.drain_replies(OWED_REPLIES_S)
    try:
        await session.close()
    except Exception:
        log.exception("closing a failed %s start", label)


async def lost_during_start(
    process: JsonLineProcess | None, label: str, step: str, exc: ConnectionLost
) -> tuple[DriverError, str]:
    """The error for a connection lost during the handshake ``step``, and the child's stderr tail
    (empty for garbage on the wire), which a driver may read further for a known refusal."""
    if isinstance(exc, ProtocolViolation):
        return DriverError(PROTOCOL_INVALID_MESSAGE, f"during {step}: {exc}"), ""
    tail = await stderr_excerpt(process)  # the reason for a crash is usually its last words
    detail = f"{label} exited during {step}: {exc}" + (f"; stderr: {tail}" if tail else "")
    return DriverError(ADAPTER_START_FAILED, detail), tail


async def handshake_answer(
    what: str,
    send: Callable[[], Awaitable[PendingRequest | asyncio.Future[Any]]],
    *,
    fatal: asyncio.Future[DriverError],
    timeout: float,
    lost: Callable[[str, ConnectionLost], Awaitable[DriverError]],
    progress: Callable[[], int] | None = None,
) -> asyncio.Future[Any]:
    """Write one handshake request with ``send`` and wait for its answer; the write and the wait
    are each bounded by ``timeout`` and raced against ``fatal``. Returns the settled answer for the
    caller to read, since what a refusal means differs by protocol. With ``progress`` (a count of
    frames the request is known to cause, e.g. the history an ACP ``session/load`` replays), the
    wait is bounded by ``timeout`` of silence instead: a long history is not a stalled CLI."""
    if fatal.done():
        raise fatal.result()
    try:
        sent = await asyncio.wait_for(send(), timeout)
    except TimeoutError:
        raise DriverError(PROTOCOL_HANDSHAKE_TIMEOUT, f"could not write {what} within {timeout:g} s") from None
    except ConnectionLost as exc:
        raise await lost(what, exc) from exc
    # An abandoned JSON-RPC request is forgotten, so that a late answer is logged as late.
    pending = sent if isinstance(sent, PendingRequest) else None
    answer = sent.future if isinstance(sent, PendingRequest) else sent
    while True:
        seen = progress() if progress is not None else 0
        await asyncio.wait({answer, fatal}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if answer.done() or fatal.done() or progress is None or progress() == seen:
            break
    if fatal.done():
        if pending is not None:
            pending.forget()
        raise fatal.result()
    if not answer.done():
        if pending is not None:
            pending.forget()
        raise DriverError(PROTOCOL_HANDSHAKE_TIMEOUT, f"{what} got no response within {timeout:g} s")
    return answer


class RpcSession(Protocol):
    client: JsonRpcClient | None
    process: JsonLineProcess | None


class RpcHandshake(abc.ABC):
    """One bounded JSON-RPC request at a time; subclasses write ``run`` and ``refusal``."""

    def __init__(
        self,
        session: RpcSession,
        profile: LaunchProfile,
        resume_id: str | None,
        *,
        label: str,
        fatal: asyncio.Future[DriverError],
    ):
        self.rpc_session = session
        self.profile = profile
        self.resume_id = resume_id
        self.label = label  # the CLI as named in errors: "codex", "kimi", …
        self.fatal = fatal  # set by the session when start-time evidence makes the start hopeless
        self.step_timeout = profile.timeouts.handshake_ms / 1000

    @abc.abstractmethod
    async def run(self) -> None:
        """The protocol's start sequence; ends with the session marked started."""

    @abc.abstractmethod
    def refusal(self, method: str, error: JsonRpcError, refused: str) -> DriverError | None:
        """What an error answer to ``method`` means (``refused``: the step's default code).
        None: the refusal is tolerated and the step answers None."""

    def check_fatal(self) -> None:
        if self.fatal.done():
            raise self.fatal.result()

    async def step(
        self, method: str, params: dict[str, Any], *, refused: str, progress: Callable[[], int] | None = None
    ) -> Any:
        """One handshake request, raced against start-fatal evidence and ``handshake_ms`` (of
        silence, with ``progress``: see ``handshake_answer``)."""
        client = self.rpc_session.client
        assert client is not None
        answer = await handshake_answer(
            method,
            lambda: client.send_request(method, params),
            fatal=self.fatal,
            timeout=self.step_timeout,
            lost=self.lost,
            progress=progress,
        )
        try:
            return answer.result()
        except JsonRpcError as exc:
            error = self.refusal(method, exc, refused)
            if error is None:
                return None
            raise error from exc
        except ConnectionLost as exc:
            raise await self.lost(method, exc) from exc

    async def notify(self, method: str) -> None:
        client = self.rpc_session.client
        assert client is not None
        try:
            # Sent without params, as the real clients do; the method alone is the notification.
            await asyncio.wait_for(client.notify(method), self.step_timeout)
        except TimeoutError:
            raise DriverError(PROTOCOL_HANDSHAKE_TIMEOUT, f"could not write {method}") from None
        except ConnectionLost as exc:
            raise await self.lost(method, exc) from exc

    async def lost(self, method: str, exc: ConnectionLost) -> DriverError:
        error, _tail = await lost_during_start(self.rpc_session.process, self.label, method, exc)
        return error

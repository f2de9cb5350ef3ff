"""One agent's native session: start with retries, resume, rebuild, close (FEATURES §3,
NATIVE_PROTOCOLS §1.3).

Every launch gets a fresh instance and binding (same actor). A start is tried 3 times with backoff
from 400 ms for transient failures; the stored native session is resumed first and a fresh session
follows if the resume fails. Progress is public: durable ``session.starting | ready | resumed |
failed | stopped`` and transient ``session.retrying``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path

from django.conf import settings

from agents import health, instances, mcp_status
from agents.drivers import remote, secret_file
from agents.drivers.base import (
    RESUME_FALLBACK_CODES,
    DriverError,
    LaunchProfile,
    McpAttachment,
    NativeSession,
    Timeouts,
)
from agents.drivers.registry import get_driver
from groupx_site.core import listen
from groupx_site.store import db
from rooms import event_types, events, system_errors
from rooms.events import ActorRef
from setup_wizard.config import ResolvedAgent, resolve_executable, ssh_config_file

logger = logging.getLogger("groupx.sessions")
START_ATTEMPTS = 3
BACKOFF_BASE_SECONDS = 0.4


# Launches under way at once. A CLI's start is a burst of CPU (an interpreter or a JS runtime
# loading); two hundred agents starting together left the server's one CPU (D83) a hundredth
# share, and health went unanswered for ~20 s. A slot is given back when the handshake ends or
# after LAUNCH_SLOT_SECONDS, whichever comes first, so a CLI hanging in its handshake (which burns
# no CPU) holds up the others by that long at most (docs/DECISIONS.md D92).
LAUNCH_SLOTS = 2 * (os.cpu_count() or 1)
LAUNCH_SLOT_SECONDS = 1.0
_launch_slots: asyncio.Semaphore | None = None


@contextlib.asynccontextmanager
async def launch_slot():
    global _launch_slots
    if _launch_slots is None:
        _launch_slots = asyncio.Semaphore(LAUNCH_SLOTS)
    slots = _launch_slots
    await slots.acquire()
    given_back = False

    def give_back() -> None:
        nonlocal given_back
        if not given_back:
            given_back = True
            slots.release()

    timer = asyncio.get_running_loop().call_later(LAUNCH_SLOT_SECONDS, give_back)
    try:
        yield
    finally:
        timer.cancel()
        give_back()


def private_dir_path() -> str:
    """Where the CLIs' secret files go (D39): beside the room's database, 0700."""
    return str(Path(settings.GROUPX_DB_PATH).parent / "private")


def launch_place(agent: ResolvedAgent) -> tuple[tuple[str, ...], remote.SshTarget | None]:
    """The argv prefix and, for an agent on another machine, its ssh target (D51): a fresh forward
    port per launch. Raises DriverError(ADAPTER_NOT_FOUND) for a local command that is not there;
    a remote one is looked up by the remote shell (``groupx doctor`` checks it beforehand)."""
    if agent.ssh:
        target = remote.SshTarget(
            destination=agent.ssh,
            local_port=listen.bound_address()[1],
            remote_port=remote.pick_remote_port(),
            config_file=ssh_config_file(),
        )
        return agent.command, target
    command = resolve_executable(agent.command)
    if command is None:
        raise DriverError(
            "ADAPTER_NOT_FOUND", f"the command {agent.command[0]!r} was not found or is not executable", retryable=False
        )
    return command, None


def resume_failed_reason(code: str) -> str:
    """What the room reads when the stored native session could not be resumed (PROTOCOL §2.2:
    a stable code, no raw CLI output)."""
    return f"its previous native session could not be resumed ({code}), so it started a fresh one"


def _db(fn):
    return db.write(fn)


def _session_event(event_type: str, actor: ActorRef, body: dict) -> None:
    from django.db import transaction

    with transaction.atomic():
        events.session_event(event_type=event_type, actor=actor, body={"actorId": actor.actor_id, **body})
        _public_condition(event_type, actor, body)


def _public_condition(event_type: str, actor: ActorRef, body: dict) -> None:
    """A CLI that keeps failing to start is a public ``system.error`` once, until a start works
    (PROTOCOL §14, docs/DECISIONS.md D89); a retry that fails again writes nothing more."""
    condition = f"session:{actor.actor_id}"
    if event_type == event_types.SESSION_FAILED:
        system_errors.report(
            condition,
            body["errorCode"],
            (
                f"{actor.display_name}'s CLI could not start after {body['attempts']} attempt(s): "
                f"{body['message']}. Its Turns wait; the next one tries again, or restart the agent."
            ),
            actor_id=actor.actor_id,
        )
    elif event_type in (event_types.SESSION_READY, event_types.SESSION_RESUMED):
        system_errors.resolve(condition, f"{actor.display_name}'s CLI started again.")


class AgentSessions:
    def __init__(self, agent: ResolvedAgent):
        self.agent = agent
        self.session: NativeSession | None = None
        self.instance_id: str | None = None
        self.binding_id: str | None = None
        # The native-reset mark this session was started under (memory.native_reset): a newer
        # one means its native history must be forgotten before the next Turn.
        self.reset_mark = 0
        self.mcp_recorded = False  # what the binding says of MCP (agents/mcp_status.py)
        self._lock = asyncio.Lock()

    @property
    def actor(self) -> ActorRef:
        return ActorRef(self.agent.actor_id, "agent", self.agent.display_name, self.instance_id)

    def usable(self) -> bool:
        return self.session is not None and self.session.alive and not self.session.needs_rebuild

    async def ensure(self) -> NativeSession:
        """A usable session, starting or rebuilding one when needed. Raises DriverError."""
        async with self._lock:
            if self.usable():
                return self.session
            if self.session is not None:
                await self._retire(reason="rebuild")
            return await self._start()

    async def _start(self) -> NativeSession:
        agent = self.agent
        health.update(agent.actor_id, status="starting", nativeSessionAvailable=False)
        resume_id, self.reset_mark = await _db(instances.resume_candidate)(agent.actor_id, agent.driver, agent.cwd)
        await _db(_session_event)(
            event_types.SESSION_STARTING,
            ActorRef(agent.actor_id, "agent", agent.display_name),
            {"driver": agent.driver, "resume": resume_id is not None},
        )
        continuity = "resumed" if resume_id else "new_session"
        last_error: DriverError | None = None
        resume_error: str | None = None  # the code of a resume that failed over to a fresh session
        attempt = 0
        while attempt < START_ATTEMPTS:
            attempt += 1
            try:
                session = await self._launch(resume_id)
            except DriverError as error:
                last_error = error
                if resume_id and error.code in RESUME_FALLBACK_CODES:
                    # The native session could not be resumed: start a fresh one for future turns.
                    # Not a failure of the agent (no lastError, so the card never shows "ready"
                    # beside one): the room is told why, now and in the session event that follows.
                    logger.warning(
                        "%s: resume of %s failed (%s: %s); starting a fresh session",
                        agent.actor_id,
                        resume_id,
                        error.code,
                        error.message,
                    )
                    resume_id, continuity, resume_error = None, "new_session_after_resume_failure", error.code
                    self._publish_retrying(attempt, 0, error.code, reason=resume_failed_reason(error.code))
                    attempt -= 1  # the fallback happens once and does not use up a start attempt
                    continue
                health.session_failed(agent.actor_id, code=error.code, message=error.message)
                if not error.retryable or attempt >= START_ATTEMPTS:
                    break
                delay = BACKOFF_BASE_SECONDS * (2 ** (attempt - 1))
                self._publish_retrying(attempt, delay, error.code)
                await asyncio.sleep(delay)
                continue
            self.session = session
            kind = event_types.SESSION_RESUMED if session.resumed else event_types.SESSION_READY
            # A last error stays until a Turn completes (agents/health.py): a rebuilt session
            # after a crash is ready, and the crash is still worth showing.
            health.session_started(agent.actor_id, instanceId=self.instance_id, mcpVerified=session.mcp_verified)
            body = {
                "driver": agent.driver,
                "continuity": "resumed" if session.resumed else continuity,
                "mcp": "verified" if session.mcp_verified else "unavailable",
            }
            if resume_error is not None and not session.resumed:
                body.update(resumeErrorCode=resume_error, reason=resume_failed_reason(resume_error))
            await _db(_session_event)(kind, self.actor, body)
            return session
        assert last_error is not None
        health.session_gave_up(agent.actor_id, code=last_error.code, retryable=last_error.retryable)
        await _db(_session_event)(
            event_types.SESSION_FAILED,
            self.actor,
            {
                "driver": agent.driver,
                "errorCode": last_error.code,
                "message": last_error.message[:500],
                "attempts": attempt,
                "agentStatus": health.snapshot(agent.actor_id)["status"],
            },
        )
        self.instance_id = self.binding_id = None  # closed as failed: nothing left to stop
        raise last_error

    def _publish_retrying(self, attempt: int, delay: float, code: str, *, reason: str | None = None) -> None:
        """Transient ``session.retrying``: the bounded projection PROTOCOL §2.2 allows (attempt,
        backoff, stable code and, for a resume given up, a fixed sentence), never raw stderr."""
        body = {
            "actorId": self.agent.actor_id,
            "attempt": attempt,
            "maxAttempts": START_ATTEMPTS,
            "nextDelayMs": int(delay * 1000),
            "errorCode": code,
        }
        if reason is not None:
            body["reason"] = reason
        events.publish_transient(
            event_type=event_types.SESSION_RETRYING,
            actor=self.actor,
            correlation_id=f"session:{self.agent.actor_id}",
            body=body,
        )

    async def _launch(self, resume_id: str | None) -> NativeSession:
        agent = self.agent
        command, ssh = launch_place(agent)
        driver = get_driver(agent.driver)
        self.instance_id, self.binding_id = await _db(instances.create_launch)(agent.actor_id, agent.driver, agent.cwd)
        timeouts = settings.GROUPX_CONFIG.timeouts
        profile = LaunchProfile(
            agent_id=agent.agent_id,
            actor_id=agent.actor_id,
            driver=agent.driver,
            command=command,
            cwd=agent.cwd,
            instance_id=self.instance_id,
            binding_id=self.binding_id,
            mcp=McpAttachment(url=f"{ssh.mcp_origin if ssh else listen.origin()}/mcp", binding_id=self.binding_id),
            timeouts=Timeouts(
                handshake_ms=timeouts.handshakeMs,
                request_ms=timeouts.requestMs,
                cancel_ms=timeouts.cancelMs,
                close_ms=timeouts.closeMs,
            ),
            private_dir=secret_file.private_directory(private_dir_path()),
            ssh=ssh,
        )
        try:
            async with launch_slot():
                session = await driver.start(profile, resume_native_session_id=resume_id)
        except DriverError:
            await _db(instances.mark_closed)(self.instance_id, self.binding_id, "failed")
            raise
        # A driver refuses to start a session it cannot give the MCP descriptor to (ACP without HTTP
        # MCP fails at initialize), and Codex and Claude take it by their launch contract; their own
        # "server ready" report arrives only during the first turn (docs/DECISIONS.md D11).
        # (Unless the CLI already reported the GroupX server failed: agents/mcp_status.py, D98.)
        session.mcp_verified = session.mcp_verified or (
            profile.mcp is not None and not mcp_status.reported_failed(session)
        )
        self.mcp_recorded = session.mcp_verified
        try:
            await _db(instances.mark_ready)(
                self.instance_id,
                self.binding_id,
                native_session_id=session.native_session_id,
                mcp_verified=session.mcp_verified,
                resumed=session.resumed,
            )
        except BaseException:  # a store fault or a restart (a cancel): never leave the CLI running
            await session.close()
            raise
        return session

    async def _retire(self, *, reason: str) -> None:
        """Close the session (or the launch in progress) and say so: durable ``session.stopped``."""
        session, instance_id, binding_id = self.session, self.instance_id, self.binding_id
        self.session = None
        if session is not None:
            await session.close()
        if instance_id and binding_id:
            await _db(instances.mark_closed)(instance_id, binding_id)
            await _db(_session_event)(event_types.SESSION_STOPPED, self.actor, {"reason": reason})
            self.instance_id = self.binding_id = None
        health.update(self.agent.actor_id, status="stopped", nativeSessionAvailable=False)

    async def retire(self, reason: str) -> None:
        """Close this agent's CLI now (a restart, a native reset); the next ``ensure`` starts another."""
        async with self._lock:
            await self._retire(reason=reason)

    async def renew(self, reason: str) -> None:
        """Replace the session now: close it, then start the next one at once so the room sees the
        agent ready (a start that fails is tried again by the next Turn, D13)."""
        await self.retire(reason)
        with contextlib.suppress(DriverError):
            await self.ensure()

    async def rebuild(self) -> None:
        """Replace a poisoned session now, so later turns find a fresh one (never replays a turn)."""
        try:
            await self.ensure()
        except DriverError as error:
            logger.warning("%s: rebuild failed: %s", self.agent.actor_id, error)

    async def close(self) -> None:
        """Shutdown: close the process tree, write no event (PROTOCOL §10.8)."""
        async with self._lock:
            session, self.session = self.session, None
            if session is not None:
                await session.close()
            if self.instance_id and self.binding_id:
                await _db(instances.mark_closed)(self.instance_id, self.binding_id)
            health.update(self.agent.actor_id, status="stopped", nativeSessionAvailable=False)

"""One FIFO lane per agent: claim the oldest queued Turn, run it on the agent's native session,
record its outcome (PROTOCOL §5, docs/ARCHITECTURE.md "The dispatch path").

Lanes run in parallel; within a lane one Turn runs at a time, in ``enqueue_seq`` order. Content,
reasoning and tool progress go out as transient SSE events while the native turn streams; nothing
per-token is stored except a partial-text checkpoint every 4,096 characters.

What one Turn may produce is capped (docs/DECISIONS.md D23): a reply or its reasoning
past 1 Mi characters, or tool progress past 1,000 records, fails the Turn with
``MESSAGE_TOO_LARGE``, keeping the text up to the cap, and the session that flooded us is rebuilt.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

from django.conf import settings

from agents import dispatch, fault_points, health, mcp_status, turn_collector
from agents.drivers.base import DriverError, NativeSession, NativeTurn, TurnStarted
from agents.sessions import AgentSessions
from agents.turn_collector import Collected, TurnHooks
from groupx_site.core.errors import ErrorCode
from groupx_site.store import db, layer, store_probe
from groupx_site.store.store_faults import Backoff, StoreUnavailable
from memory.context import ContextBudgetExceeded
from memory.engine import prepare_packet
from rooms import event_types, events
from turns import lifecycle
from turns.lifecycle import Claim, TurnOutcome
from turns.states import CANCELLED, COMPLETED, FAILED, INTERRUPTED

logger = logging.getLogger("groupx.lanes")
CHECKPOINT_CHARACTERS = 4_096
PACKET_REBUILDS = 8  # compactions before a claim whose packet keeps going stale: then the Turn fails
QUEUE_RECHECK_SECONDS = 5.0  # split mode: how late a Turn whose wake-up was lost starts, at most
# The caps (D23) and the one-event queue live with the routine that reads a turn's events.
REPLY_LIMIT_CHARACTERS = turn_collector.REPLY_LIMIT_CHARACTERS
REASONING_LIMIT_CHARACTERS = turn_collector.REASONING_LIMIT_CHARACTERS
TOOL_RECORD_LIMIT = turn_collector.TOOL_RECORD_LIMIT
OVER_CAP_CODE = turn_collector.OVER_CAP_CODE


def _db(fn):
    return db.write(fn)


def _db_sharing_a_commit(fn):
    # A Turn's hot transactions, reviewed for it: they may share one commit with the calls queued
    # beside them (groupx_site/speedups/group_commit.py, D68).
    return db.write(fn, group_commit=True)


@dataclass
class ActiveTurn:
    claim: Claim | None
    turn_id: str
    native: NativeTurn | None = None
    cancel_requested: bool = False
    cancel_deadline: float | None = None
    said: Collected = field(default_factory=Collected)
    chunk_index: int = 0
    checkpointed: int = 0


class _LaneHooks(TurnHooks):
    """What a lane does while its Turn streams: the Turn is marked started at the first event;
    content, reasoning and tool progress go out as transient events; the partial reply is
    checkpointed every 4,096 characters; a timeout sends the native cancel."""

    def __init__(self, lane: Lane, active: ActiveTurn):
        self.lane, self.active = lane, active
        self.sessions = lane.sessions
        self.interrupted = False

    def deadline(self) -> float | None:
        return self.active.cancel_deadline

    async def started(self, event) -> None:
        active = self.active
        native_id = event.native_turn_id if isinstance(event, TurnStarted) else active.native.native_turn_id
        await _db_sharing_a_commit(lifecycle.mark_started)(active.claim, self.sessions.actor, native_id)
        # Claude Code's per-turn system/init says whether its GroupX MCP connected: recorded now,
        # most of its calls in this very Turn already meet it (D98).
        await mcp_status.keep_binding_in_step(self.sessions)
        await fault_points.reached(fault_points.RUNNING, active.turn_id)  # test-only, inert (D36)

    async def content(self, text: str) -> None:
        active, claim = self.active, self.active.claim
        events.publish_transient(
            event_type=event_types.TURN_CONTENT_DELTA,
            actor=self.sessions.actor,
            correlation_id=claim.correlation_id,
            root_correlation_id=claim.root_correlation_id,
            to=[claim.target_actor_id],
            body={"turnId": claim.turn_id, "chunkIndex": active.chunk_index, "text": text},
        )
        active.chunk_index += 1
        said = active.said
        if said.content_characters - active.checkpointed >= CHECKPOINT_CHARACTERS:
            active.checkpointed = said.content_characters
            partial = "".join(said.content)
            said.content[:] = [partial]  # later joins copy this once, not every piece again
            await _db(lifecycle.checkpoint_partial_text)(claim.turn_id, partial)

    async def reasoning(self, text: str) -> None:
        claim = self.active.claim
        events.publish_transient(
            event_type=event_types.TURN_REASONING_DELTA,
            actor=self.sessions.actor,
            correlation_id=claim.correlation_id,
            root_correlation_id=claim.root_correlation_id,
            to=[claim.target_actor_id],
            body={"turnId": claim.turn_id, "chunkIndex": len(self.active.said.reasoning) - 1, "text": text},
        )

    async def tool(self, record: dict) -> None:
        claim = self.active.claim
        events.publish_transient(
            event_type=event_types.TOOL_PROGRESS,
            actor=self.sessions.actor,
            correlation_id=claim.correlation_id,
            root_correlation_id=claim.root_correlation_id,
            to=[claim.target_actor_id],
            body={"turnId": claim.turn_id, **record},
        )

    async def timed_out(self, heard: bool) -> None:
        # The native session can no longer be trusted to be in step with us: rebuild it.
        self.sessions.session.needs_rebuild = True
        self.interrupted = self.active.cancel_requested
        if not self.interrupted:
            await self.lane._send_cancel(self.active)


class Lane:
    def __init__(self, sessions: AgentSessions):
        self.sessions = sessions
        self.agent = sessions.agent
        self.wake = asyncio.Event()
        self.active: ActiveTurn | None = None
        self.task: asyncio.Task | None = None
        self.first_start: asyncio.Task | None = None
        self._next_head: dispatch.LaneHead | None = None  # read by the last finish, for _run_queue
        # The next Turn while the last finish claims it (``_finish_then_claim``): a cancel finds it.
        self._claiming: ActiveTurn | None = None
        self._restarting = asyncio.Lock()  # two restarts of one agent run one after the other

    def poke(self) -> None:
        self.wake.set()

    def start_session(self) -> asyncio.Task:
        """Start the session eagerly, so the room shows the agent ready (the runtime waits for it
        before it says ready, D42); the lane's queue runs once ``start`` is called."""
        if self.first_start is None:
            self.first_start = asyncio.get_running_loop().create_task(
                self._start_session(), name=f"session-start:{self.agent.actor_id}"
            )
        return self.first_start

    async def _start_session(self) -> None:
        with contextlib.suppress(DriverError, StoreUnavailable):
            await self.sessions.ensure()

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self._run(), name=f"lane:{self.agent.actor_id}")

    async def _run(self) -> None:
        await self.start_session()  # a session that failed to start is tried again by the first Turn
        self.wake.set()
        backoff = Backoff()
        recheck = QUEUE_RECHECK_SECONDS if layer.is_shared() else None
        while True:
            # On a shared layer (split mode) a wake-up may be lost (Redis restarted, a full
            # channel): the queue is read again at an interval, since the table is the truth (D43).
            if recheck is None:
                await self.wake.wait()
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), recheck)
            self.wake.clear()
            try:
                await self._run_queue()
                backoff.reset()
            except StoreUnavailable as fault:
                # The store is at fault (disk full, read-only, locked): wait, then look at the queue
                # again; new work (a POST that got through) wakes the lane sooner (D24).
                logger.warning("%s: %s; the lane waits for the store", self.agent.actor_id, fault.message)
                await store_probe.store_back(backoff, self.wake)
                self.wake.set()

    async def _run_queue(self) -> None:
        self._next_head = self._claiming = None  # left by an earlier run of the queue: maybe stale
        while True:
            head, self._next_head = self._next_head, None  # the last finish read it: no hand-off
            if head is not None and head.ready is not None:  # and claimed it, for this session
                self.active, self._claiming = self._claiming, None
            if head is None:
                head = await self._read_head()
            if head is None:
                continue  # the head's claim failed its Turn: read the queue again
            if head.native_reset_mark > self.sessions.reset_mark:
                # A context reset asked every agent to forget its native history: this session
                # is closed between Turns and the next one starts fresh (D41).
                await self.sessions.renew("context_reset")
            turn = head.turn
            if turn is None:
                return
            try:
                await self._run_turn(turn.turn_id, turn.source_event_id, head.ready)
            except asyncio.CancelledError:
                raise
            except StoreUnavailable:
                await self._end_after_store_fault()
                raise
            except Exception:  # a bug must not kill the lane: the turn fails, the lane goes on
                logger.exception("%s: turn %s crashed the lane", self.agent.actor_id, turn.turn_id)
                if self.active is None or self.active.claim is None:
                    await _db(lifecycle.fail_queued_head)(turn.turn_id, "INTERNAL_ERROR")
                else:
                    await self._finish(self.active, TurnOutcome(status=FAILED, error_code="INTERNAL_ERROR"))
            finally:
                self.active = None

    async def _read_head(self) -> dispatch.LaneHead | None:
        """The lane's next Turn and the native-reset mark. With the session usable, the Turn is
        claimed for its prompt in the same writer call (``dispatch.claim_head``: one hand-off
        instead of two, D60); None when that claim failed its Turn here."""
        sessions = self.sessions
        if not sessions.usable():
            return await _db(dispatch.lane_head)(self.agent.actor_id)
        # Registered before the call, as _run_turn does: the writer names the Turn before it
        # claims it, so a cancel that lands meanwhile is kept (D20).
        active = self.active = ActiveTurn(claim=None, turn_id="")
        try:
            head = await _db_sharing_a_commit(dispatch.claim_head)(
                self.agent,
                active,
                session_reset_mark=sessions.reset_mark,
                binding_id=sessions.binding_id,
                instance_id=sessions.instance_id,
            )
        except asyncio.CancelledError:
            raise
        except StoreUnavailable:
            if active.turn_id:
                await self._end_after_store_fault()  # a claim without its write-ahead is put back
            self.active = None
            raise
        except ContextBudgetExceeded as error:
            self.active = None
            await _db(lifecycle.fail_queued_head)(active.turn_id, ErrorCode.CONTEXT_BUDGET_EXCEEDED.value, str(error))
            return None
        except Exception:
            self.active = None
            if not active.turn_id:
                raise  # the head itself could not be read, as before
            logger.exception("%s: turn %s crashed the lane", self.agent.actor_id, active.turn_id)
            await _db(lifecycle.fail_queued_head)(active.turn_id, "INTERNAL_ERROR")
            return None
        if head.ready is None:
            self.active = None
        return head

    async def _end_after_store_fault(self) -> None:
        """A store fault stopped a Turn. Unclaimed, it is queued (its transaction rolled back, or
        a claim without its write-ahead is put back) and runs when the store is back. Claimed,
        its prompt may have reached the CLI: it fails with STORE_UNAVAILABLE once that can be
        written (``_finish`` waits for the store), and the native session, left mid-turn, is
        rebuilt."""
        active = self.active
        if active is None:
            return
        if active.claim is None:  # the claim may have committed without its write-ahead
            await store_probe.until_available(
                lambda: _db(lifecycle.requeue_if_never_sent)(active.turn_id),
                what=f"{self.agent.actor_id}: requeueing {active.turn_id}",
                logger=logger,
            )
            return
        if self.sessions.session is not None:
            self.sessions.session.needs_rebuild = True
        await self._finish(active, self._outcome(active, FAILED, "STORE_UNAVAILABLE"))

    # ---- one turn ---------------------------------------------------------------------------------

    async def _run_turn(self, turn_id: str, source_event_id: str, ready: dispatch.ReadyTurn | None = None) -> None:
        if ready is None:
            try:
                session = await self.sessions.ensure()
            except DriverError as error:
                await _db(lifecycle.fail_queued_head)(turn_id, error.code, error.message)
                return
            # From here a cancel of this Turn is remembered (``request_cancel``), even one that
            # arrives while the claim below is being written.
            active = self.active = ActiveTurn(claim=None, turn_id=turn_id)
        else:  # claimed with the head (``_read_head``), on the session that was usable then
            session, active = self.sessions.session, self.active
        ids = {"binding_id": self.sessions.binding_id, "instance_id": self.sessions.instance_id}
        try:
            if ready is None:
                ready = await _db_sharing_a_commit(dispatch.claim_for_prompt)(
                    self.agent, turn_id, source_event_id, **ids
                )
            passes = 0
            while ready.needs_compaction:
                if passes == PACKET_REBUILDS:
                    raise ContextBudgetExceeded("the room's checkpoint kept moving while this Turn's packet was built")
                passes += 1
                # Compacts older room history first (FEATURES §14); a failed compaction raises. The
                # claim rebuilds the packet if another lane's compaction moved the checkpoint
                # meanwhile, and asks for this again if the rebuilt one leaves messages out.
                packet = await prepare_packet(self.agent, source_event_id)
                ready = await _db_sharing_a_commit(dispatch.claim_for_prompt)(
                    self.agent, turn_id, source_event_id, packet=packet, **ids
                )
        except ContextBudgetExceeded as error:
            # The mandatory context alone is over the budget, or the compaction that would make
            # room failed (FEATURES §7, §14): nothing was claimed, nothing is sent.
            await _db(lifecycle.fail_queued_head)(turn_id, ErrorCode.CONTEXT_BUDGET_EXCEEDED.value, str(error))
            return
        if ready.claim is None:
            return  # cancelled while we prepared it
        active.claim = ready.claim
        if not ready.invoked or active.cancel_requested:
            await self._finish(active, TurnOutcome(status=CANCELLED))  # cancelled before the prompt: never sent
            return
        await fault_points.reached(fault_points.AFTER_WRITE_AHEAD, turn_id)  # test-only, inert (D36)
        repaired_before = session.text_repaired
        outcome = await self._prompt(session, active, ready.packet.text)
        await mcp_status.keep_binding_in_step(self.sessions)  # the CLI may have reported its MCP failed
        repaired = session.text_repaired - repaired_before
        if repaired:
            # The CLI sent text no UTF-8 writer accepts; the decoder put U+FFFD in its place.
            logger.warning(
                "%s: turn %s: %s lone surrogate(s) from the CLI replaced with U+FFFD",
                self.agent.actor_id,
                turn_id,
                repaired,
            )
            outcome.terminal_facts["textRepaired"] = repaired
        if outcome.status == COMPLETED and self.sessions.usable():
            # Before the terminal is published: whoever sees the Turn completed sees health agree.
            health.turn_completed(self.agent.actor_id)
        await self._finish(active, outcome, claim_next=True)
        if not self.sessions.usable() and self._claiming is None:
            # (A session that died during the finish that claimed the next Turn on it is rebuilt
            # after that Turn's prompt fails on it, as after ``_read_head``'s claim.)
            if outcome.error_code:
                # The Turn cost the session (a crash, a protocol fault, a CLI out of step): health
                # shows it failed until the rebuild, and keeps the error after (D38).
                health.record_failure(self.agent.actor_id, outcome.error_code, outcome.message or outcome.error_code)
            await self.sessions.rebuild()

    async def _prompt(self, session: NativeSession, active: ActiveTurn, text: str) -> TurnOutcome:
        try:
            active.native = await session.start_turn(active.turn_id, text)
        except DriverError as error:
            session.needs_rebuild = True
            return TurnOutcome(status=FAILED, error_code=error.code, message=error.message)
        if active.cancel_requested:
            await self._send_cancel(active)
        return await self._consume(active)

    async def _consume(self, active: ActiveTurn) -> TurnOutcome:
        timeouts = settings.GROUPX_CONFIG.timeouts
        hooks = _LaneHooks(self, active)
        ending = await turn_collector.collect(
            active.native,
            active.said,
            hooks,
            first_event_s=timeouts.firstEventMs / 1000,
            idle_s=timeouts.idleMs / 1000,
            logger=logger,
            label=f"{self.agent.actor_id}: turn {active.turn_id}",
        )
        if ending.kind == turn_collector.TIMED_OUT:
            if hooks.interrupted:
                return self._outcome(active, INTERRUPTED, "TURN_INTERRUPTED")
            return self._outcome(active, FAILED, ending.code, ending.message)
        if ending.kind == turn_collector.ENDED:
            self.sessions.session.needs_rebuild = True
            return self._outcome(active, FAILED, ending.code, ending.message)
        if ending.kind == turn_collector.OVER_CAP:
            return self._over_cap(active, ending.what, content=ending.content, rebuild=ending.out_of_step)
        if ending.kind == turn_collector.COMPLETED:
            return TurnOutcome(
                status=COMPLETED,
                content=ending.content,
                reasoning="".join(active.said.reasoning),
                tool_records=active.said.tools,
            )
        if ending.kind == turn_collector.CANCELLED:
            return self._outcome(active, CANCELLED, None)
        return self._outcome(active, FAILED, ending.code, ending.message)

    def _over_cap(
        self, active: ActiveTurn, what: str, *, content: str | None = None, rebuild: bool = True
    ) -> TurnOutcome:
        logger.warning(
            "%s: turn %s: the CLI's %s passed its cap; the turn fails with %s",
            self.agent.actor_id,
            active.turn_id,
            what,
            OVER_CAP_CODE,
        )
        if rebuild:
            # The CLI is still producing this turn, out of step with us: its session is replaced
            # (the close sends the native cancel, bounded) and never takes the next turn.
            self.sessions.session.needs_rebuild = True
        outcome = self._outcome(active, FAILED, OVER_CAP_CODE)
        if content is not None:
            outcome.content = content
        return outcome

    @staticmethod
    def _outcome(active: ActiveTurn, status: str, code: str | None, message: str = "") -> TurnOutcome:
        said = active.said
        return TurnOutcome(
            status=status,
            content="".join(said.content),
            error_code=code,
            message=message,
            reasoning="".join(said.reasoning),
            tool_records=said.tools,
        )

    async def _finish(self, active: ActiveTurn | None, outcome: TurnOutcome, *, claim_next: bool = False) -> None:
        if active is None:
            return
        await fault_points.reached(fault_points.COMPLETING, active.turn_id)  # test-only, inert (D36)
        if claim_next and self.sessions.usable() and await self._finish_then_claim(active, outcome):
            return
        # The agent's answer exists only here until it is written: through a store fault, wait.
        # A restart stopping this lane now must not drop an outcome already on its way, and it does
        # not: the writer call is handed to its thread before this task can be cancelled (its first
        # suspension is the wait for the result), and a cancelled caller leaves the call to finish
        # there (groupx_site/store/db.py; tests/unit/test_handoff.py). An ``asyncio.shield`` around
        # it was a task and two callbacks per Turn for the same guarantee (D70).
        # The call reads the lane's next head too (``_run_queue`` takes it: one hand-off fewer, D60).
        self._next_head = await store_probe.until_available(
            lambda: _db_sharing_a_commit(dispatch.finish_then_head)(
                active.claim, active.turn_id, outcome, self.sessions.actor, self.agent.actor_id
            ),
            what=f"{self.agent.actor_id}: recording the outcome of {active.turn_id}",
            logger=logger,
        )

    async def _finish_then_claim(self, active: ActiveTurn, outcome: TurnOutcome) -> bool:
        """Record the outcome and claim the lane's next Turn for its prompt in one writer call
        (``dispatch.finish_then_claim``, D81); ``_run_queue`` runs that Turn next. False when the
        call failed: a Turn it claimed without its write-ahead is put back in the queue, and the
        caller records the outcome as it would alone (a finish already written is not written
        twice: ``lifecycle.finish`` ignores a Turn already terminal)."""
        sessions = self.sessions
        # Registered before the call, as in ``_read_head``: the writer names the Turn before it
        # claims it, so a cancel that lands meanwhile is kept (D20).
        claiming = self._claiming = ActiveTurn(claim=None, turn_id="")
        try:
            head = await _db_sharing_a_commit(dispatch.finish_then_claim)(
                active.claim,
                active.turn_id,
                outcome,
                sessions.actor,
                self.agent,
                claiming,
                session_reset_mark=sessions.reset_mark,
                binding_id=sessions.binding_id,
                instance_id=sessions.instance_id,
            )
        except asyncio.CancelledError:
            raise  # restart recovery ends what the call wrote (``restart``)
        except Exception as error:
            self._claiming = None
            if not isinstance(error, StoreUnavailable | ContextBudgetExceeded):  # those _read_head meets again
                logger.error(
                    "%s: claiming the Turn after %s failed", self.agent.actor_id, active.turn_id, exc_info=error
                )
            if claiming.turn_id:
                await store_probe.until_available(
                    lambda: _db(lifecycle.requeue_if_never_sent)(claiming.turn_id),
                    what=f"{self.agent.actor_id}: requeueing {claiming.turn_id}",
                    logger=logger,
                )
            return False
        if head.ready is None or not (head.ready.claim or head.ready.needs_compaction):
            self._claiming = None  # nothing claimed: no Turn of this lane's is on its way
        self._next_head = head
        return True

    # ---- cancel -----------------------------------------------------------------------------------

    def request_cancel(self, turn_id: str) -> bool:
        active = self.active
        if active is None or active.turn_id != turn_id:
            active = self._claiming  # claimed by the finish of the Turn before it
            if active is None or active.turn_id != turn_id:
                return False
        if not active.cancel_requested:
            active.cancel_requested = True
            loop = asyncio.get_running_loop()
            active.cancel_deadline = loop.time() + settings.GROUPX_CONFIG.timeouts.cancelMs / 1000
            if active.native is not None:
                loop.create_task(self._send_cancel(active))
        return True

    async def _send_cancel(self, active: ActiveTurn) -> None:
        if active.native is None:
            return
        try:
            # Bounded: the lane may await this while it reads no events, and a CLI blocked on a
            # full stdout pipe (paced, D23) may read no stdin either; the lane's own cancel
            # deadline and timeouts then decide the Turn.
            await asyncio.wait_for(active.native.cancel(), settings.GROUPX_CONFIG.timeouts.cancelMs / 1000)
        except DriverError as error:
            logger.info("%s: native cancel failed: %s", self.agent.actor_id, error)
        except TimeoutError:
            logger.warning("%s: the native cancel could not be written within cancelMs", self.agent.actor_id)

    async def restart(self, reason: str) -> None:
        """Replace this agent's CLI now (docs/DECISIONS.md D41): the lane stops where it is, the CLI
        is closed (durable ``session.stopped``), a Turn it was running is interrupted with its
        partial text kept (one that never reached the CLI is queued again), and a new lane task
        starts a new instance at once; the queued Turns run on it in their order."""
        async with self._restarting:
            await self.stop()
            await self.sessions.retire(reason)
            await store_probe.until_available(
                lambda: _db(lifecycle.recover_agent_turns)(self.agent.actor_id, reason=reason),
                what=f"{self.agent.actor_id}: ending the Turn cut off by the {reason}",
                logger=logger,
            )
            self.active = self._claiming = None
            self.first_start = None  # the old instance's start is done: the new lane starts its own at once
            self.start()

    async def stop(self) -> None:
        """GroupX is stopping: keep what the running Turn said so far (restart recovery will mark it
        interrupted with this partial text; a shutdown writes no event)."""
        active = self.active
        if active is not None and active.said.content:
            with contextlib.suppress(Exception):
                await _db(lifecycle.checkpoint_partial_text)(active.turn_id, "".join(active.said.content))
        for task in (self.task, self.first_start):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

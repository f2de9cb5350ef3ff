"""Protocol-neutral turn runner shared by ``fake_codex`` and ``fake_claude`` (NATIVE_PROTOCOLS §6.4).

A turn runs on a worker thread while the main thread keeps reading stdin, so the native cancel
(``turn/interrupt``, control ``interrupt``) can land mid-stream. ``TurnBase`` owns the directive
loop, the cancel flag, the hang/idle semantics and the directives whose behaviour is the same on
every wire; each protocol subclass renders content, tools and terminals in its own frames.
(``fake_acp`` predates this module and keeps its own loop; its behaviour is frozen.)
"""

from __future__ import annotations

import abc
import threading
import uuid
from typing import Any

try:  # imported as agents.fakes._faketurn (tests)
    from . import _fakecore as core
except ImportError:  # run through a shim: agents/fakes itself is on sys.path
    import _fakecore as core  # type: ignore[no-redef]


class Cancelled(Exception):
    """The broker's native cancel arrived; unwind to the protocol's cancelled terminal."""


class TurnBase(abc.ABC):
    """One native turn. Subclasses implement the ``render``/terminal hooks and ``d_*`` directives
    that differ per wire; this class runs them in order and owns cancellation."""

    def __init__(
        self,
        log: core.WireLog,
        scenario: dict[str, Any],
        directives: list[core.Directive],
        message: str,
        prompt_text: str,
    ):
        self.log = log
        self.scenario = scenario
        self.directives = directives
        self.message = message
        self.prompt_text = prompt_text
        self.ctl = core.TurnControl()
        self.text_parts: list[str] = []
        self.dup_terminal = False
        # A hang may override these; Cancelled raised elsewhere settles with the scenario values.
        self.cancel_delay_ms = float(scenario.get("cancel_delay_ms", 0))
        self.cancel_during = "stream"

    # ---------------------------------------------------------------------- hooks to implement

    @abc.abstractmethod
    def complete(self) -> None:
        """Normal terminal after the directive list (or an explicit stop)."""

    @abc.abstractmethod
    def settle_cancelled(self) -> None:
        """Native cancelled terminal (called once the cancel arrived and the delay elapsed)."""

    @abc.abstractmethod
    def fail(self, message: str, **extra: Any) -> None:
        """Native failure terminal."""

    @abc.abstractmethod
    def content(self, pieces: list[str], delay_ms: float) -> None:
        """Stream assistant text as one native message/item."""

    # --------------------------------------------------------------------------------- driving

    def run(self) -> None:
        try:
            for directive in self.directives:
                if self.ctl.settled:
                    return
                self.check_cancel()
                handler = getattr(self, "d_" + directive.name.replace("-", "_"), None)
                if handler is None:
                    self.log.check("unknown_directive", False, directive=directive.name)
                    continue
                handler(directive)
            if not self.ctl.settled:
                self.complete()
        except Cancelled:
            self._cancelled()
        except core.DirectiveError as exc:
            self.log.check("directive_error", False, error=str(exc))
            self.fail(f"fake: bad directive: {exc}")

    def _cancelled(self) -> None:
        core.sleep_ms(self.cancel_delay_ms)
        self.settle_cancelled()

    def check_cancel(self) -> None:
        if self.ctl.cancel.is_set():
            raise Cancelled

    def pause(self, ms: float) -> None:
        if core.sleep_ms(ms, self.ctl.cancel):
            raise Cancelled

    def wait_forever(self) -> None:
        """``ignore_cancel``: never settle; the broker has to close or kill us."""
        self.log.record("turn_abandoned")
        while True:
            threading.Event().wait(3600)

    def agent_text(self) -> str:
        return "".join(self.text_parts)

    def await_cancel(self, d: core.Directive | None) -> None:
        """The end of ``hang``/``silent``/``idle``: block until the native cancel, then unwind
        (or never settle with ``ignore_cancel``)."""
        d = d or core.Directive("hang")
        self.cancel_delay_ms = d.get_float("cancel_delay_ms", self.cancel_delay_ms)
        ignore = d.get_bool("ignore_cancel", core.scenario_bool(self.scenario, "ignore_cancel"))
        self.ctl.cancel.wait()
        if ignore:
            self.wait_forever()
        raise Cancelled

    # ------------------------------------------------------------------- common directives

    def d_echo(self, d: core.Directive) -> None:
        self.content(core.split_text(f"echo: {self.message}", d.get_int("chunks", 2)), d.get_float("delay_ms", 0))

    def d_reply(self, d: core.Directive) -> None:
        text = d.get_str("text", "ok") or ""
        self.content(core.split_text(text, d.get_int("chunks", 1)), d.get_float("delay_ms", 0))

    def d_stream(self, d: core.Directive) -> None:
        n = d.get_int("n", 5)
        text = d.get_str("text")
        pieces = core.split_text(text, n) if text else [f"part-{i} " for i in range(1, n + 1)]
        self.content(pieces, d.get_float("delay_ms", 20))

    def d_silent(self, d: core.Directive) -> None:
        self.await_cancel(d)

    def d_sleep(self, d: core.Directive) -> None:
        self.pause(d.get_float("ms", 100))

    def d_stderr(self, d: core.Directive) -> None:
        core.write_stderr(self.log, d.get_str("text", "fake stderr line") or "")

    def d_dup_terminal(self, _d: core.Directive) -> None:
        self.dup_terminal = True

    # ------------------------------------------------------------- hostile CLI (D23)

    def d_surrogate(self, d: core.Directive) -> None:
        """A text delta whose JSON text carries the lone surrogate escape ``\\ud800``."""
        self.content([d.get_str("text", f"before {core.hostile.LONE_SURROGATE} after") or ""], 0)

    def d_close_stdin(self, d: core.Directive) -> None:
        """Close our own stdin (fd 0) and keep running: the broker can no longer write to us.
        ``after_turn``: end the turn normally first, so the session is idle when stdin closes."""
        if d.get_bool("after_turn"):
            self.complete()
        core.hostile.close_own_stdin(self.log)
        self.wait_forever()

    def d_flood(self, d: core.Directive) -> None:
        """Text deltas of ``chunk`` characters, ``n`` of them (0: until cancelled or killed)."""
        text, n, sent = core.hostile.flood_text(d.get_int("chunk", 65536)), d.get_int("n", 0), 0
        self.flood_open()
        while n <= 0 or sent < n:
            self.check_cancel()
            self.flood_delta(text)
            sent += 1

    def flood_open(self) -> None:
        """Open the message a flood streams into (per wire)."""
        raise core.DirectiveError("flood is not rendered on this wire")

    def flood_delta(self, text: str) -> None:
        """One flood delta, not kept in ``text_parts`` so the fake's memory stays flat."""
        raise core.DirectiveError("flood is not rendered on this wire")

    def d_invalid(self, d: core.Directive) -> None:
        raise core.DirectiveError(d.get_str("error", "invalid directive") or "")

    @staticmethod
    def reason_pieces(d: core.Directive) -> list[str]:
        n = d.get_int("n", 1)
        text = d.get_str("text")
        return core.split_text(text, n) if text else [f"thinking-{i} " for i in range(1, n + 1)]

    @staticmethod
    def publish_args(d: core.Directive, who: str) -> dict[str, Any]:
        return {"content": d.get_str("text", f"hello from {who}"), "clientCommandId": f"fake-{uuid.uuid4().hex[:12]}"}

    @staticmethod
    def send_args(d: core.Directive) -> dict[str, Any]:
        to = [t for t in (d.get_str("to", "") or "").split(",") if t]
        return {"to": to, "content": d.get_str("text", "hello"), "clientCommandId": f"fake-{uuid.uuid4().hex[:12]}"}

    @staticmethod
    def ask_args(d: core.Directive) -> dict[str, Any]:
        """``mcp-ask to=agent:x text=...``: the demo's one-line agent-to-agent question."""
        return {**TurnBase.send_args(d), "content": d.get_str("text", "what do you think?")}

    # ---- the demo room assistant (operator tools; D48) -----------------------------------------
    STATUS_QUESTION = "The room assistant asks: what is your status, in one line?"

    @staticmethod
    def structured(outcome: Any) -> dict[str, Any]:
        found = (outcome.result or {}).get("structuredContent") if outcome.ok else None
        return found if isinstance(found, dict) else {}

    @classmethod
    def enabled_agents(cls, roster: Any) -> list[str]:
        return [a["actorId"] for a in cls.structured(roster).get("agents", []) if a.get("enabled")]

    @classmethod
    def status_ask_args(cls, d: core.Directive, agents: list[str]) -> dict[str, Any]:
        return {
            "to": agents,
            "content": d.get_str("text", cls.STATUS_QUESTION),
            "clientCommandId": f"demo-status-{uuid.uuid4().hex[:12]}",
            "timeoutMs": d.get_int("timeout_ms", 120000),
        }

    @classmethod
    def status_summary(cls, agents: list[str], asked: Any) -> str:
        """What the demo assistant answers: one line per agent, from worker_ask's results."""
        if not agents:
            return "There is no enabled agent in the room to ask."
        if asked is None or not asked.ok:
            return f"I could not ask the agents ({asked.code if asked is not None else 'no answer'})."
        results = {r.get("target"): r for r in cls.structured(asked).get("results", [])}
        lines = [f"I asked {len(agents)} agent(s) for a status:"]
        for agent in agents:
            result = results.get(agent, {})
            if result.get("status") == "completed":
                lines.append(f"- {agent}: {' '.join(str(result.get('content', '')).split())[:200]}")
            elif result.get("status") == "pending":
                lines.append(f"- {agent}: still working (I will read the room for the answer later)")
            else:
                lines.append(f"- {agent}: no answer ({result.get('errorCode') or result.get('status') or 'unknown'})")
        return "\n".join(lines)

    def mcp_expect(self, d: core.Directive, tool: str, outcome: Any) -> None:
        expect = d.get_str("expect", "any")
        if expect in ("ok", "error"):
            self.log.check(
                "mcp_expect", outcome.ok == (expect == "ok"), tool=tool, expect=expect, got=outcome.summary(tool)
            )

    def garbage(self, d: core.Directive, writer: core.FrameWriter, harmless: dict[str, Any]) -> None:
        """Write the bad bytes, then continue, exit or hang as ``then=`` (or the kind) says."""
        kind = d.get_str("kind", "not_json") or "not_json"
        writer.raw(core.garbage_bytes(kind, harmless, jsonrpc=False, size_mb=d.get_float("size_mb", 2)))
        default_then = "continue" if kind in core.TOLERATED_GARBAGE else "exit" if kind == "partial_line" else "hang"
        then = d.get_str("then", default_then)
        if then == "exit":
            core.exit_now(self.log, d.get_int("code", 1), "garbage", kind=kind)
        elif then == "hang":
            self.await_cancel(d)

    def crash_now(self, d: core.Directive) -> None:
        if d.get_str("signal"):
            core.crash_by_signal(self.log, d.get_str("signal") or "KILL")
        core.exit_now(self.log, d.get_int("code", 7), "crash", after=d.get_str("after", "none"))

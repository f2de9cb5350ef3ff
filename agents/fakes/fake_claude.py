"""Fake Claude Code in ``--print`` stream-json mode (NATIVE_PROTOCOLS §4, §6.8).

Not JSON-RPC: one typed JSON object per line each way, SDK ``control_request``s for the handshake,
``stream_event``/``assistant``/``user``/``result`` frames for turns. Shapes follow the real 2.1.197
transcripts of the real CLI (recorded by the real-CLI tier, ``tests/realcli``, docs/CONFORMANCE.md)
where they differ from the spec
(``system/init`` before *every* turn, an interrupt ack without a body, MCP tool results without
``is_error``). Behaviour comes from the scenario (§6.3) and per-turn ``[[fake: …]]`` directives;
what the broker sent goes to the wire log. Stdlib only.

Run through the ``bin/claude`` shim with the exact GroupX argv (§4.1).
"""

from __future__ import annotations

import json
import os
import queue
import re
import shlex
import sys
import threading
import traceback
import uuid
from dataclasses import dataclass
from typing import Any

try:  # imported as agents.fakes.fake_claude (tests)
    from . import _fakecore as core
    from . import _fakemcp as fmcp
    from ._claude_directives import CLAUDE_VERSION, MODEL, ClaudeTurn, result_frame
except ImportError:  # run through a shim or as a script: agents/fakes itself is on sys.path
    import _fakecore as core  # type: ignore[no-redef]
    import _fakemcp as fmcp  # type: ignore[no-redef]
    from _claude_directives import CLAUDE_VERSION, MODEL, ClaudeTurn, result_frame  # type: ignore[no-redef]

BASE_ARGV = (
    "--print",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
    "--include-partial-messages",
    "--permission-mode",
    "bypassPermissions",
)
PERMISSION_MODES = ("acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan")
ROOT_REFUSAL = "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons"
GROUPX_TOOLS = (
    "send",
    "publish",
    "ask",
    "collect",
    "watch",
    "steer",
    "read",
    "memory_search",
    "memory_remember",
    "core_memory_remember",
    "identity_read",
    "identity_remember",
)
BUILTIN_TOOLS = (
    "Task",
    "Bash",
    "Edit",
    "Glob",
    "Grep",
    "NotebookEdit",
    "Read",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
    "Write",
    "ListMcpResourcesTool",
    "ReadMcpResourceTool",
)
_SLASH = ("compact", "context", "cost", "init", "review", "security-review")

BUILTIN_SCENARIO: dict[str, Any] = {
    "default_turn": ["echo"],
    "strict_replies": True,
    "die_on_bad_input": True,
    # The real CLI refuses bypassPermissions as root without IS_SANDBOX=1 (L1). Off by default so the
    # suite can run as root; `root_check: true` turns the real rule on.
    "root_check": False,
    "mcp_probe_on_start": False,
    "noise": False,
    "init_frame": "normal",
    "complete_on_interrupt": False,
}
_CLI_REQ = re.compile(r"^cli-req-(\d+)$")


@dataclass
class Args:
    mode: str  # "session-id" | "resume"
    session_id: str
    mcp_config: dict[str, Any] | None
    mcp: fmcp.McpDescriptor | None


def read_mcp_config(value: str) -> tuple[Any, str]:
    """Inline JSON when it looks like an object, else a file to read (as Claude Code decides)."""
    if not value.lstrip().startswith("{"):
        try:
            with open(value, encoding="utf-8") as file:
                value = file.read()
        except OSError as exc:
            return None, f"--mcp-config file cannot be read: {exc.strerror}"
    try:
        return json.loads(value), ""
    except ValueError:
        return None, "--mcp-config is not valid JSON"


def parse_argv(argv: list[str]) -> tuple[Args | None, str]:
    """The nine-token base, optional ``--mcp-config <file or json>``, then exactly one of
    ``--session-id <uuid>`` / ``--resume <uuid>`` (§6.8); anything else is invalid. Like the real
    CLI, ``--mcp-config`` takes inline JSON or the path of a JSON file (GroupX passes a file)."""
    if tuple(argv[: len(BASE_ARGV)]) != BASE_ARGV:
        return None, "argv must start with the GroupX base flags"
    rest = argv[len(BASE_ARGV) :]
    config = desc = None
    if rest[:1] == ["--mcp-config"]:
        if len(rest) < 2:
            return None, "--mcp-config needs a value"
        config, why = read_mcp_config(rest[1])
        if why:
            return None, why
        servers = config.get("mcpServers") if isinstance(config, dict) else None
        entry = servers.get("groupx") if isinstance(servers, dict) else None
        desc = fmcp.McpDescriptor.from_entry(entry) if isinstance(entry, dict) else None
        if desc is None:
            return None, "--mcp-config needs mcpServers.groupx (http {url, headers} or stdio {command, args})"
        if not desc.binding():
            return None, "mcpServers.groupx carries no X-GroupX-Binding header / --binding argument"
        rest = rest[2:]
    if len(rest) != 2 or rest[0] not in ("--session-id", "--resume"):
        return None, "expected exactly one of --session-id <uuid> / --resume <uuid> at the end"
    try:
        canonical = str(uuid.UUID(rest[1]))
    except ValueError:
        canonical = ""
    if canonical != rest[1].lower():
        return None, f"{rest[0]} needs a UUID"
    return Args(rest[0][2:], rest[1], config, desc), ""


class ClaudeCli:
    def __init__(self, args: Args, scenario: dict[str, Any], log: core.WireLog):
        self.args = args
        self.scenario = scenario
        self.log = log
        self.session_id = args.session_id
        self.writer = core.FrameWriter(log)
        self.pending = core.PendingRequests()
        self.store = core.StateStore("claude")
        self.mcp = fmcp.McpClient("claude", log, scenario)
        self.strict = core.scenario_bool(scenario, "strict_replies", True)
        self.noise = core.scenario_bool(scenario, "noise")
        self.permission_mode = "bypassPermissions"  # from argv
        self.history: list[dict[str, str]] = []
        self.persisted = False
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self.turn: ClaudeTurn | None = None
        self.lock = threading.Lock()
        self.queued = 0  # user messages read but not yet settled
        self.early_interrupt = False  # an interrupt that landed before its turn object existed
        self.stray_owed = False  # complete_on_interrupt: an extra result goes out after the next prompt
        self.last_result_error = False
        self.mcp_state: dict[str, Any] = {"status": "connected" if args.mcp else None, "tools": None}
        self.probe_done = threading.Event()
        self.probe_done.set()

    # -------------------------------------------------------------------------------- start

    def startup(self) -> None:
        """L1 (root), L2 (session id in use) and L3 (resume of an unknown session), in that order."""
        if (
            core.scenario_bool(self.scenario, "root_check")
            and os.geteuid() == 0
            and os.environ.get("IS_SANDBOX") != "1"
        ):
            core.write_stderr(self.log, ROOT_REFUSAL)
            core.exit_now(self.log, 1, "root_refused")
        data = self.store.load(self.session_id)
        if self.args.mode == "session-id" and data is not None:
            core.write_stderr(self.log, f"Error: Session ID {self.session_id} is already in use.")
            core.exit_now(self.log, 1, "session_in_use")
        if self.args.mode == "resume":
            if data is None:
                core.write_stderr(self.log, f"No conversation found with session ID: {self.session_id}")
                self.send(
                    result_frame(
                        self.session_id,
                        "error_during_execution",
                        True,
                        num_turns=0,
                        errors=[f"No conversation found with session ID: {self.session_id}"],
                    )
                )
                core.exit_now(self.log, 1, "resume_unknown")
            self.history = [h for h in data.get("history", []) if isinstance(h, dict)]
            self.persisted = True
        if core.scenario_bool(self.scenario, "mcp_probe_on_start") and self.args.mcp is not None:
            self.mcp_state["status"] = "pending"
            self.probe_done.clear()
            core.start_worker(self.log, self._probe, "fake-mcp-probe")

    def _probe(self) -> None:
        outcome = self.mcp.probe(self.args.mcp)
        self.log.record("mcp_probe", ok=outcome.ok, code=outcome.code, tools=outcome.tools)
        self.mcp_state = {
            "status": "connected" if outcome.ok else "failed",
            "tools": outcome.tools,
            "error": None if outcome.ok else str(outcome.code),
        }
        self.probe_done.set()

    # ----------------------------------------------------------------------------- wire out

    def send(self, msg: dict[str, Any]) -> None:
        self.writer.frame(msg)

    def control_success(self, request_id: Any, response: Any = None) -> None:
        body: dict[str, Any] = {"subtype": "success", "request_id": request_id}
        if response is not None:
            body["response"] = response
        self.send({"type": "control_response", "response": body})

    def control_error(self, request_id: Any, error: str, code: str | None = None) -> None:
        body: dict[str, Any] = {"subtype": "error", "request_id": request_id, "error": error}
        if code:
            body["error_code"] = code
        self.send({"type": "control_response", "response": body})

    def ask(self, subtype: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        """A CLI→SDK control request and a bounded wait for the broker's control_response."""
        num, slot = self.pending.new()
        self.send(
            {"type": "control_request", "request_id": f"cli-req-{num}", "request": {"subtype": subtype, **payload}}
        )
        reply = slot.wait(float(self.scenario.get("interaction_reply_timeout_ms", 10000)) / 1000.0)
        return reply.get("response") if reply else None

    def log_interaction(self, kind: str, ok: bool, why: str, reply: Any) -> None:
        self.log.check("interaction_reply", ok, kind=kind, why=why, reply=reply)
        if not ok and self.strict:
            core.write_stderr(self.log, f"fake: wrong reply to ask kind={kind}: {why}: {json.dumps(reply)}")
            core.exit_now(self.log, core.EX_BAD_REPLY, "bad_interaction_reply", kind=kind)

    def mcp_servers(self) -> list[dict[str, Any]]:
        # ``mcp_status_reported``: what init says of the GroupX server whatever the CLI's own state
        # (a CLI that reports it failed yet calls it later).
        status = self.scenario.get("mcp_status_reported") or self.mcp_state["status"]
        return [{"name": "groupx", "status": status}] if self.args.mcp else []

    def init_frame(self) -> dict[str, Any] | None:
        """``system/init`` before each turn (obs: every user message gets one), with the
        ``init_frame`` variants that the broker's first-turn verification must catch (§4.5)."""
        variant = str(self.scenario.get("init_frame") or "normal")
        if variant == "missing":
            return None
        tools = list(BUILTIN_TOOLS)
        if self.args.mcp:
            tools += [f"mcp__groupx__{t}" for t in (self.mcp_state.get("tools") or GROUPX_TOOLS)]
        frame: dict[str, Any] = {
            "type": "system",
            "subtype": "init",
            "cwd": os.getcwd(),
            "session_id": self.session_id,
            "tools": tools,
            "mcp_servers": self.mcp_servers(),
            "model": MODEL,
            "permissionMode": self.permission_mode,
            "slash_commands": list(_SLASH),
            "apiKeySource": "none",
            "claude_code_version": CLAUDE_VERSION,
            "output_style": "default",
            "agents": ["general-purpose", "Explore", "Plan"],
            "skills": [],
            "plugins": [],
            "uuid": str(uuid.uuid4()),
            "fast_mode_state": "off",
        }
        if variant == "malformed":
            del frame["session_id"]
        elif variant == "wrong_session":
            frame["session_id"] = str(uuid.uuid4())
        elif variant == "wrong_cwd":
            frame["cwd"] = os.path.join(os.path.dirname(os.getcwd()) or "/", "not-the-agent-cwd")
        elif variant == "downgraded_mode":
            frame["permissionMode"] = "default"
        return frame

    def status_frame(self) -> dict[str, Any]:
        return {
            "type": "system",
            "subtype": "status",
            "status": "requesting",
            "uuid": str(uuid.uuid4()),
            "session_id": self.session_id,
        }

    # ------------------------------------------------------------------------------ wire in

    def serve(self) -> None:
        core.start_worker(self.log, self._turn_loop, "fake-claude-turns")
        for raw in core.stdin_lines():
            self.handle_line(raw)
        if core.scenario_bool(self.scenario, "ignore_eof"):
            core.on_eof(self.log, self.scenario)
        # The real CLI exits 1 at EOF when the last result was an error (L4, interrupt transcript).
        core.exit_now(self.log, 1 if self.last_result_error else 0, "eof")

    def handle_line(self, raw: bytes) -> None:
        msg, bad = core.decode_line(raw)
        if bad or not isinstance(msg, dict):
            text = raw.decode("utf-8", "backslashreplace").rstrip("\r\n")
            self.log.record("in_bad", reason=bad or "non_object", raw=text[:4000])
            if core.scenario_bool(self.scenario, "die_on_bad_input", True):
                # L5: one malformed stdin line kills the real CLI.
                core.write_stderr(self.log, f"Error parsing streaming input line: {text[:200]}")
                core.exit_now(self.log, 1, "bad_input")
            return
        self.log.record("in", msg=msg)
        kind = msg.get("type")
        if kind == "control_request":
            self.handle_control(msg)
        elif kind == "control_response":
            response = msg.get("response") if isinstance(msg.get("response"), dict) else {}
            match = _CLI_REQ.match(str(response.get("request_id")))
            if not match or not self.pending.resolve({"id": int(match.group(1)), "response": response}):
                self.log.check("unmatched_response", False, request_id=response.get("request_id"))
        elif kind == "user":
            with self.lock:
                self.queued += 1
            self.inbox.put(msg)
        else:
            self.log.record("in_ignored", type=kind)

    def handle_control(self, msg: dict[str, Any]) -> None:
        request = msg.get("request") if isinstance(msg.get("request"), dict) else {}
        rid, subtype = msg.get("request_id"), request.get("subtype")
        if subtype == "initialize":
            self.on_initialize(rid)
        elif subtype == "set_permission_mode":
            self.on_set_mode(rid, request.get("mode"))
        elif subtype == "interrupt":
            self.on_interrupt(rid)
        elif subtype == "mcp_status":
            self.control_success(rid, {"mcpServers": self._mcp_status()})
        else:
            self.control_error(rid, f"Unsupported control request subtype: {subtype}", "unsupported_request")  # L6

    def on_initialize(self, rid: Any) -> None:
        if core.scenario_bool(self.scenario, "no_handshake_reply"):
            self.log.record("initialize_unanswered", request_id=rid)
            return
        err = self.scenario.get("initialize_error")
        if err:
            self.control_error(rid, err if isinstance(err, str) else "fake initialize failure")
            return
        # Deliberately large, with account data: the broker must project it and never log it.
        response: dict[str, Any] = {
            "commands": [{"name": n, "description": f"{n} (fake)", "argumentHint": ""} for n in _SLASH],
            "agents": [{"name": "general-purpose", "description": "General agent (fake)"}],
            "output_style": "default",
            "available_output_styles": ["default", "Explanatory", "Learning"],
            "models": [
                {
                    "value": "default",
                    "resolvedModel": MODEL,
                    "displayName": "Default (recommended)",
                    "description": "fake model",
                }
            ],
            "account": {
                "email": "fake@example.invalid",
                "organization": "Fake Org",
                "tokenSource": "none",
                "apiKeySource": "none",
                "apiProvider": "firstParty",
            },
            "pid": os.getpid(),
            "claude_code_version": CLAUDE_VERSION,
        }
        if not core.scenario_bool(self.scenario, "omit_current_permission_mode"):
            response["current_permission_mode"] = self.scenario.get("init_permission_mode") or self.permission_mode
        self.control_success(rid, response)

    def on_set_mode(self, rid: Any, mode: Any) -> None:
        self.log.check("set_mode", mode == "bypassPermissions", mode=mode)
        err = self.scenario.get("set_mode_error")
        if err:
            spec = err if isinstance(err, dict) else {}
            self.control_error(rid, str(spec.get("error", "fake set_permission_mode failure")), spec.get("error_code"))
            return
        if core.scenario_bool(self.scenario, "set_mode_hang"):
            self.log.record("set_mode_hang", request_id=rid)
            return
        if mode not in PERMISSION_MODES:  # §4.4
            self.control_error(
                rid, "Cannot set permission mode: must be one of " + ", ".join(PERMISSION_MODES), "invalid_mode"
            )
            return
        self.permission_mode = str(self.scenario.get("set_mode_result") or mode)
        self.control_success(rid, {"mode": self.permission_mode})

    def on_interrupt(self, rid: Any) -> None:
        # 2.1.197 acknowledges with no body (transcript); the spec's {still_queued: []} is opt-in.
        self.control_success(rid, {"still_queued": []} if self.scenario.get("interrupt_still_queued") else None)
        with self.lock:
            turn = self.turn
            if turn is None and self.queued:
                # The prompt is read but its turn not yet built (e.g. waiting for the MCP probe):
                # the interrupt applies to it as soon as it starts.
                self.early_interrupt = True
        if turn is None:
            self.log.record("interrupt_idle" if not self.early_interrupt else "interrupt_early", request_id=rid)
            return
        if turn.ctl.request_cancel() > 1:
            self.log.check("interrupt_once", False, count=turn.ctl.cancel_count)

    def _mcp_status(self) -> list[dict[str, Any]]:
        if not self.args.mcp or not self.args.mcp_config:
            return []
        entry = dict(self.args.mcp_config["mcpServers"]["groupx"])
        status: dict[str, Any] = {
            "name": "groupx",
            "status": self.mcp_state["status"],
            "config": entry,
            "transport": entry.get("type", self.args.mcp.transport),
            "scope": "dynamic",
        }
        if self.mcp_state.get("error"):
            status["error"] = self.mcp_state["error"]
        return [status]

    # -------------------------------------------------------------------------------- turns

    def _turn_loop(self) -> None:
        """One user message at a time, in arrival order, as the real CLI queues them."""
        while True:
            msg = self.inbox.get()
            try:
                self.run_prompt(msg)
            except Exception:  # a bug in the fake: report it and keep serving later prompts
                tb = traceback.format_exc()
                self.log.check("fake_internal_error", False, error=tb)
                core.write_stderr(self.log, "fake internal error:\n" + tb)
                if self.turn is not None:
                    self.turn.fail("fake internal error")
                else:  # it died before its turn existed: nothing will settle it
                    with self.lock:
                        self.queued -= 1

    def run_prompt(self, msg: dict[str, Any]) -> None:
        if self.stray_owed:
            # §4.6 race: the interrupt's own result lands after the next prompt was written.
            self.stray_owed = False
            self.send(
                result_frame(
                    self.session_id, "error_during_execution", True, terminal_reason="aborted_streaming", num_turns=1
                )
            )
        content = (msg.get("message") or {}).get("content") if isinstance(msg.get("message"), dict) else None
        if isinstance(content, str):
            text = content
        else:
            text = "\n".join(
                b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
            )
        if not self.persisted:  # L11: the transcript exists from the first user message on
            self.persisted = True
            self._persist()
        # Like the real CLI, the first query waits (bounded) for MCP servers still connecting.
        self.probe_done.wait(self.mcp.timeout)
        init = self.init_frame()
        if init is not None:
            self.send(init)
        self.send(self.status_frame())
        directives, message = core.turn_plan(text, self.scenario.get("default_turn"))
        if core.scenario_bool(self.scenario, "not_logged_in"):
            directives = [core.Directive("fail", {"not_logged_in": "1"})]
        turn = ClaudeTurn(self, text, directives, message)
        with self.lock:
            self.turn = turn
            if self.early_interrupt:
                self.early_interrupt = False
                turn.ctl.request_cancel()
        self.log.record("turn", directives=[{"name": d.name, **d.params} for d in directives])
        turn.run()

    def end_turn(self, turn: ClaudeTurn, is_error: bool) -> None:
        """Before the result goes out: persist, free the slot, remember the exit code for EOF."""
        self.history.append({"role": "user", "text": turn.prompt_text})
        if turn.agent_text():
            self.history.append({"role": "assistant", "text": turn.agent_text()})
        self._persist()
        self.last_result_error = is_error
        with self.lock:
            self.queued -= 1
            if self.turn is turn:
                self.turn = None

    def _persist(self) -> None:
        self.store.save(self.session_id, {"cwd": os.getcwd(), "history": self.history})


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    core.answer_version(argv, "claude")
    log = core.WireLog("claude")
    args, why = parse_argv(argv)
    if args is None:
        core.log_start(log, None, argv=argv)
        core.write_stderr(log, f"invalid argv: {why}: {shlex.join(argv)}")
        core.exit_now(log, core.EX_USAGE, "argv", reason=why)
    try:
        scenario = core.load_scenario("claude", BUILTIN_SCENARIO)
    except core.ScenarioError as exc:
        core.log_start(log, None, argv=argv)
        core.write_stderr(log, f"fake: bad scenario: {exc}")
        core.exit_now(log, core.EX_CONFIG, "scenario", error=str(exc))
    core.log_start(log, scenario, argv=argv, session_id=args.session_id, mode=args.mode)
    core.install_process_options(log, scenario)
    if scenario.get("exit_before_handshake") and not scenario.get("exit_on_start"):
        scenario = {**scenario, "exit_on_start": scenario["exit_before_handshake"]}  # §6.8 spelling
    core.startup_common(log, scenario)
    cli = ClaudeCli(args, scenario, log)
    cli.startup()
    cli.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What a model request says, per API, and which scripted step answers it (the mock model's brain;
``mock_model.py`` is its HTTP and streaming half). Stdlib only."""

from __future__ import annotations

import contextlib
import json
import threading
from typing import Any

MARKERS = ("[current_message]", "[groupx_current_message]")
DEFAULT_STEPS = [{"text": "Hello from the GroupX mock model.", "chunks": 4}]
AUX_STEPS = [{"text": "GroupX mock title", "chunks": 1, "delay_ms": 0}]


# ---- the script ------------------------------------------------------------------------------------


class Script:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.rules: list[dict[str, Any]] = []
        self.default: dict[str, Any] = {"steps": DEFAULT_STEPS}

    def load(self, document: dict[str, Any]) -> None:
        rules = document.get("rules") or []
        for rule in rules:
            if not isinstance(rule, dict) or not isinstance(rule.get("when"), str) or not rule["when"]:
                raise ValueError(f"a rule needs a non-empty 'when': {rule!r}")
            if not isinstance(rule.get("steps"), list) or not rule["steps"]:
                raise ValueError(f"a rule needs a non-empty 'steps' list: {rule!r}")
        with self._lock:
            self.rules.extend(rules)
            if isinstance(document.get("default"), dict):
                self.default = document["default"]

    def reset(self) -> None:
        with self._lock:
            self.rules = []
            self.default = {"steps": DEFAULT_STEPS}

    def match(self, api: str, current: str) -> tuple[str | None, list[dict[str, Any]]]:
        with self._lock:
            found = [r for r in self.rules if r.get("api") in (None, api) and r["when"] in current]
            if found:  # the most specific rule wins: "K1-after" over "K1"
                best = max(found, key=lambda r: len(r["when"]))
                return best["when"], best["steps"]
            return None, self.default.get("steps") or DEFAULT_STEPS


def current_part(text: str) -> str:
    """What follows the last current-message marker (the whole text when there is none)."""
    best = -1
    for marker in MARKERS:
        at = text.rfind(marker)
        if at >= 0 and at + len(marker) > best:
            best = at + len(marker)
    return text[best:].strip() if best >= 0 else text


def split_text(text: str, chunks: int) -> list[str]:
    chunks = max(1, min(chunks, len(text) or 1))
    size, extra = divmod(len(text), chunks)
    out, at = [], 0
    for i in range(chunks):
        step = size + (1 if i < extra else 0)
        out.append(text[at : at + step])
        at += step
    return [c for c in out if c] or [""]


# ---- what a request says, per API -----------------------------------------------------------------


class View:
    """The parts of a request the script needs, whatever the API."""

    def __init__(self, api: str, user_text: str, rounds: int, tool_result: str | None, tools: list[dict]):
        self.api = api
        self.user_text = user_text
        self.current = current_part(user_text)
        self.rounds = rounds
        self.tool_result = tool_result
        self.tools = tools  # [{"name", "namespace"?}]


def _text_of(content: Any, kinds: tuple[str, ...] = ("text", "input_text")) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") in kinds)
    return ""


def _stringify(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = [b.get("text") for b in value if isinstance(b, dict) and isinstance(b.get("text"), str)]
        if texts:
            return "\n".join(texts)
    return json.dumps(value, ensure_ascii=False)


def view_responses(body: dict[str, Any]) -> View:
    items = [i for i in (body.get("input") or []) if isinstance(i, dict)]
    last_user = max(
        (n for n, i in enumerate(items) if i.get("type", "message") == "message" and i.get("role") == "user"),
        default=-1,
    )
    user_text = _text_of(items[last_user].get("content")) if last_user >= 0 else ""
    after = items[last_user + 1 :]
    rounds = sum(1 for i in after if i.get("type") in ("function_call", "custom_tool_call", "local_shell_call"))
    outputs = [i for i in after if i.get("type") in ("function_call_output", "custom_tool_call_output")]
    tool_result = _stringify(outputs[-1].get("output")) if outputs else None
    tools: list[dict] = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            for sub in tool.get("tools") or []:
                if isinstance(sub, dict) and sub.get("name"):
                    tools.append({"name": sub["name"], "namespace": tool.get("name")})
        elif tool.get("name"):
            tools.append({"name": tool["name"]})
    return View("responses", user_text, rounds, tool_result, tools)


def view_messages(body: dict[str, Any]) -> View:
    messages = [m for m in (body.get("messages") or []) if isinstance(m, dict)]

    def is_tool_result(message: dict) -> bool:
        content = message.get("content")
        return isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        )

    last_user = max(
        (n for n, m in enumerate(messages) if m.get("role") == "user" and not is_tool_result(m)), default=-1
    )
    user_text = _text_of(messages[last_user].get("content")) if last_user >= 0 else ""
    after = messages[last_user + 1 :]
    rounds = sum(1 for m in after if m.get("role") == "assistant")
    tool_result = None
    for message in after:
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                tool_result = _stringify(block.get("content"))
    tools = [{"name": t["name"]} for t in body.get("tools") or [] if isinstance(t, dict) and t.get("name")]
    return View("messages", user_text, rounds, tool_result, tools)


def view_chat(body: dict[str, Any]) -> View:
    messages = [m for m in (body.get("messages") or []) if isinstance(m, dict)]
    last_user = max((n for n, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    user_text = _text_of(messages[last_user].get("content")) if last_user >= 0 else ""
    after = messages[last_user + 1 :]
    rounds = sum(1 for m in after if m.get("role") == "assistant" and m.get("tool_calls"))
    results = [m for m in after if m.get("role") == "tool"]
    tool_result = _stringify(results[-1].get("content")) if results else None
    tools = []
    for tool in body.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and function.get("name"):
            tools.append({"name": function["name"]})
    return View("chat", user_text, rounds, tool_result, tools)


SHELL_TOOLS = {
    "responses": [("exec_command", lambda c: {"cmd": c}), ("shell", lambda c: {"command": ["bash", "-lc", c]})],
    "messages": [("Bash", lambda c: {"command": c, "description": "Run a command"})],
    "chat": [
        ("terminal", lambda c: {"command": c}),
        ("Shell", lambda c: {"command": c}),
        ("run_shell_command", lambda c: {"command": c}),
    ],
}


def resolve_tool(view: View, tool: str, server: str) -> dict[str, Any] | None:
    """The wire name (and codex namespace) under which this CLI offered MCP tool ``server``/``tool``."""
    prefix = f"mcp__{server}"
    for entry in view.tools:  # codex 0.169: a namespace tool "mcp__groupx" holding the bare names
        namespace = (entry.get("namespace") or "").rstrip("_")
        if namespace == prefix and entry["name"] == tool:
            return {"name": tool, "namespace": entry["namespace"]}
    names = [entry["name"] for entry in view.tools if not entry.get("namespace")]
    for candidate in (f"{prefix}__{tool}", f"mcp_{server}_{tool}", f"{server}__{tool}", f"{server}_{tool}", tool):
        if candidate in names:
            return {"name": candidate}
    return None


def result_json(text: str | None) -> dict[str, Any]:
    """The tool's JSON payload inside a tool result as a CLI wrapped it for the model: Codex prefixes
    ``Wall time … Output:``; Hermes wraps ``{"result": "<the tool's text>", "structuredContent": …}``
    (or ``{"error": "<text>"}``) in ``<untrusted_tool_result>``; Claude passes the text as is."""
    decoder = json.JSONDecoder()
    at = (text or "").find("{")
    while at >= 0:
        try:
            value, _ = decoder.raw_decode(text, at)
        except ValueError:
            value = None
        if isinstance(value, dict):
            inner = (
                value.get("result", value.get("error"))
                if set(value) <= {"result", "structuredContent", "error"}
                else None
            )
            if isinstance(inner, str):
                with contextlib.suppress(ValueError):
                    parsed = json.loads(inner)
                    if isinstance(parsed, dict):
                        return parsed
            return value
        at = text.find("{", at + 1)
    return {}


def fill(value: Any, tool_result: str | None) -> Any:
    """Replace ``"{json:key}"`` strings in tool arguments with that key of the last tool result."""
    if isinstance(value, dict):
        return {k: fill(v, tool_result) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, tool_result) for v in value]
    if isinstance(value, str) and value.startswith("{json:") and value.endswith("}"):
        return result_json(tool_result).get(value[6:-1])
    return value


def plan(view: View, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The reply for this request: {"kind": "text"|"tool"|"error", …}."""
    if view.rounds >= len(steps):
        return {"kind": "text", "text": "(mock: script exhausted)", "chunks": 1, "delay": 0.0}
    step = steps[view.rounds]
    if "tool" in step:
        server = step.get("server", "groupx")
        found = resolve_tool(view, step["tool"], server)
        if found is None:
            offered = sorted({(t.get("namespace") or "") + ":" + t["name"] for t in view.tools})
            return {
                "kind": "text",
                "text": f"MOCK ERROR: MCP tool {server}/{step['tool']} was not offered; "
                f"offered: {', '.join(offered)[:2000]}",
                "chunks": 1,
                "delay": 0.0,
            }
        args = fill(step.get("args") or {}, view.tool_result)
        return {"kind": "tool", **found, "args": args, "text": step.get("say")}
    if "shell" in step:
        names = {t["name"] for t in view.tools if not t.get("namespace")}
        for name, make in SHELL_TOOLS[view.api]:
            if name in names:
                return {"kind": "tool", "name": name, "args": make(step["shell"]), "text": step.get("say")}
        return {"kind": "text", "text": "MOCK ERROR: no shell tool offered", "chunks": 1, "delay": 0.0}
    if "error" in step:
        return {"kind": "error", "status": int(step["error"]), "message": step.get("message", "mock error")}
    text = str(step.get("text", ""))
    text = text.replace("{result}", view.tool_result or "").replace("{current}", view.current)
    return {
        "kind": "text",
        "text": text,
        "chunks": int(step.get("chunks", 3)),
        "delay": float(step.get("delay_ms", 10)) / 1000,
        "reasoning": step.get("reasoning"),
    }

"""GroupX's scripted mock model server for the real-CLI conformance tier (issue 9). Stdlib only.

One process serves the three wire APIs the real CLIs speak, on 127.0.0.1 and a port chosen by
the OS:

    POST /v1/responses          OpenAI Responses API, SSE          codex app-server
    POST /v1/messages           Anthropic Messages API, SSE/JSON   Claude Code (?beta=true)
    POST /v1/chat/completions   OpenAI Chat Completions, SSE/JSON  hermes, kimi
    GET  …/models, POST /api/show, HEAD /                           probes: a one-model list / 200

Usage::

    python mock_model.py --log requests.jsonl [--script script.json] [--port 0]

The first stdout line is ``mock-model listening on 127.0.0.1:<port>``.

Script. The model's behaviour is a list of rules, loaded from ``--script`` and/or posted while it
runs (``POST /_mock/rules`` appends, ``POST /_mock/reset`` clears, ``GET /_mock/rules`` shows)::

    {"rules": [
       {"when": "KEY-1",                    # substring of the current message (required;
                                            #   the longest matching "when" wins)
        "api": "responses",                 # optional: responses | messages | chat
        "steps": [
          {"tool": "publish", "args": {...}},               # call the GroupX MCP tool `publish`
          {"tool": "ask", "server": "groupx", "args": {...}},
          {"shell": "echo hi"},                             # call the CLI's own shell tool
          {"text": "got {result}", "chunks": 4, "delay_ms": 20, "reasoning": "thinking…"},
          {"error": 500, "message": "overloaded"}           # an HTTP error reply
        ]}],
     "default": {"steps": [{"text": "Hello from the GroupX mock model."}]}}

A request that offers no tools at all is a CLI's side request (Hermes titles its sessions with
one) and always gets ``GroupX mock title``; it is logged with ``aux: true`` and matches no rule.

The *current message* is the text of the request's last user message after its last
``[current_message]`` marker (the Context Packet puts the Turn's message last), so room history
quoted above the marker never matches. The step is chosen statelessly: the number of assistant
tool-call rounds since that user message. ``{result}`` in a text step is the last tool result the
CLI sent back; ``{current}`` is the current message. In a tool step's arguments, a string
``"{json:key}"`` becomes that key of the JSON object in the last tool result (for example the
``messageEventId`` an ``ask`` returned, to ``collect`` it). When the steps run out the model says
``(mock: script exhausted)``.

Every request is appended to the JSONL log as ``{seq, t, method, path, api, headers, body,
current, rule, step, aux, tool_result, reply}`` so that a test can read exactly what the CLI sent the model (the
Context Packet, the tools it offered, the tool results).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MARKERS = ("[current_message]", "[groupx_current_message]")
DEFAULT_STEPS = [{"text": "Hello from the GroupX mock model.", "chunks": 4}]
AUX_STEPS = [{"text": "GroupX mock title", "chunks": 1, "delay_ms": 0}]
MODEL = "mock-model"


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
        out.append(text[at:at + step])
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
    last_user = max((n for n, i in enumerate(items) if i.get("type", "message") == "message"
                     and i.get("role") == "user"), default=-1)
    user_text = _text_of(items[last_user].get("content")) if last_user >= 0 else ""
    after = items[last_user + 1:]
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
        return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result"
                                                 for b in content)

    last_user = max((n for n, m in enumerate(messages) if m.get("role") == "user" and not is_tool_result(m)),
                    default=-1)
    user_text = _text_of(messages[last_user].get("content")) if last_user >= 0 else ""
    after = messages[last_user + 1:]
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
    after = messages[last_user + 1:]
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
    "chat": [("terminal", lambda c: {"command": c}), ("Shell", lambda c: {"command": c}),
             ("run_shell_command", lambda c: {"command": c})],
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
            inner = value.get("result", value.get("error")) if set(value) <= {"result", "structuredContent",
                                                                                "error"} else None
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
            return {"kind": "text", "text": f"MOCK ERROR: MCP tool {server}/{step['tool']} was not offered; "
                                            f"offered: {', '.join(offered)[:2000]}", "chunks": 1, "delay": 0.0}
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
    return {"kind": "text", "text": text, "chunks": int(step.get("chunks", 3)),
            "delay": float(step.get("delay_ms", 10)) / 1000, "reasoning": step.get("reasoning")}


# ---- HTTP ------------------------------------------------------------------------------------------


class Log:
    def __init__(self, path: str):
        self.path = path
        self._lock = threading.Lock()
        self._seq = 0

    def write(self, record: dict[str, Any]) -> None:
        with self._lock:
            self._seq += 1
            record = {"seq": self._seq, **record}
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record, ensure_ascii=False) + "\n")


class ClientGone(Exception):
    pass


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: MockServer

    def log_message(self, *args: Any) -> None:  # quiet: everything goes to the JSONL log
        pass

    # -- plumbing --

    def _read_body(self) -> Any:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return {}
        try:
            return json.loads(raw)
        except ValueError:
            return {"_raw": raw.decode("utf-8", "replace")[:10000]}

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream_open(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

    def _event(self, name: str | None, payload: Any, pause: float = 0.0) -> None:
        data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
        frame = (f"event: {name}\n" if name else "") + f"data: {data}\n\n"
        encoded = frame.encode()
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(encoded), encoded))
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError) as exc:
            raise ClientGone() from exc
        if pause:
            time.sleep(pause)

    def _stream_close(self) -> None:
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError) as exc:
            raise ClientGone() from exc

    def _record(self, body: Any, **extra: Any) -> None:
        self.server.log.write({"t": time.time(), "method": self.command, "path": self.path,
                               "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body, **extra})

    # -- routes --

    def do_HEAD(self) -> None:  # Claude Code's preconnect probe
        self._record(None, api="probe")
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        if path == "/_mock/rules":
            return self._json(200, {"rules": self.server.script.rules, "default": self.server.script.default})
        self._record(None, api="probe")
        if path.endswith("/models"):
            return self._json(200, {"object": "list", "data": [_model_entry()], "models": [_model_entry()]})
        if "/models/" in path:
            return self._json(200, _model_entry())
        self._json(404, {"error": {"message": f"mock: no route for GET {path}"}})

    def do_POST(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        body = self._read_body()
        if path == "/_mock/rules":
            try:
                self.server.script.load(body if isinstance(body, dict) else {})
            except ValueError as exc:
                return self._json(400, {"error": str(exc)})
            return self._json(200, {"rules": len(self.server.script.rules)})
        if path == "/_mock/reset":
            self.server.script.reset()
            return self._json(200, {"rules": 0})
        handlers = {"/v1/responses": (view_responses, self.serve_responses), "/v1/messages": (view_messages, self.serve_messages),
                    "/v1/chat/completions": (view_chat, self.serve_chat)}
        if path.endswith("/messages/count_tokens"):
            self._record(body, api="probe")
            return self._json(200, {"input_tokens": 100})
        for suffix, (make_view, reply) in handlers.items():
            if path.endswith(suffix) and isinstance(body, dict):
                view = make_view(body)
                auxiliary = not view.tools  # a title or summary request on the side: never scripted
                rule, steps = (None, AUX_STEPS) if auxiliary else self.server.script.match(view.api, view.current)
                decision = plan(view, steps)
                self._record(body, api=view.api, current=view.current, rule=rule, step=view.rounds, aux=auxiliary,
                             tool_result=view.tool_result,
                             reply={k: v for k, v in decision.items() if k != "delay"})
                try:
                    if decision["kind"] == "error":
                        return self._json(decision["status"], {"error": {"type": "mock_error",
                                                                         "message": decision["message"]}})
                    return reply(body, decision)
                except ClientGone:
                    return  # the CLI hung up (an interrupt or a cancel): expected
        self._record(body, api="probe")
        if path.endswith("/api/show"):
            return self._json(200, {"model_info": {}, "details": {}})
        self._json(404, {"error": {"message": f"mock: no route for POST {path}"}})

    # -- OpenAI Responses (codex) --

    def serve_responses(self, body: dict[str, Any], decision: dict[str, Any]) -> None:
        response_id = _id("resp")
        self._stream_open()
        self._event("response.created", {"type": "response.created", "response": {
            "id": response_id, "object": "response", "status": "in_progress", "model": body.get("model"), "output": []}})
        output: list[dict[str, Any]] = []
        index = 0
        if decision.get("reasoning"):
            output.append(self._responses_reasoning(index, decision["reasoning"]))
            index += 1
        if decision["kind"] == "tool":
            if decision.get("text"):
                output.append(self._responses_message(index, [decision["text"]], 0.0))
                index += 1
            output.append(self._responses_call(index, decision))
        else:
            output.append(self._responses_message(index, split_text(decision["text"], decision["chunks"]),
                                                  decision["delay"]))
        usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 110}
        self._event("response.completed", {"type": "response.completed", "response": {
            "id": response_id, "object": "response", "status": "completed", "model": body.get("model"),
            "output": output, "usage": usage}})
        self._stream_close()

    def _responses_reasoning(self, index: int, text: str) -> dict[str, Any]:
        item = {"type": "reasoning", "id": _id("rs"), "summary": []}
        self._event("response.output_item.added", {"type": "response.output_item.added", "output_index": index,
                                                   "item": item})
        self._event("response.reasoning_summary_part.added", {
            "type": "response.reasoning_summary_part.added", "item_id": item["id"], "output_index": index,
            "summary_index": 0, "part": {"type": "summary_text", "text": ""}})
        self._event("response.reasoning_summary_text.delta", {
            "type": "response.reasoning_summary_text.delta", "item_id": item["id"], "output_index": index,
            "summary_index": 0, "delta": text})
        self._event("response.reasoning_summary_text.done", {
            "type": "response.reasoning_summary_text.done", "item_id": item["id"], "output_index": index,
            "summary_index": 0, "text": text})
        done = {**item, "summary": [{"type": "summary_text", "text": text}]}
        self._event("response.output_item.done", {"type": "response.output_item.done", "output_index": index,
                                                  "item": done})
        return done

    def _responses_message(self, index: int, chunks: list[str], delay: float) -> dict[str, Any]:
        item = {"type": "message", "id": _id("msg"), "role": "assistant", "status": "in_progress", "content": []}
        self._event("response.output_item.added", {"type": "response.output_item.added", "output_index": index,
                                                   "item": item})
        self._event("response.content_part.added", {
            "type": "response.content_part.added", "item_id": item["id"], "output_index": index, "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []}})
        for chunk in chunks:
            self._event("response.output_text.delta", {
                "type": "response.output_text.delta", "item_id": item["id"], "output_index": index,
                "content_index": 0, "delta": chunk}, delay)
        text = "".join(chunks)
        self._event("response.output_text.done", {"type": "response.output_text.done", "item_id": item["id"],
                                                  "output_index": index, "content_index": 0, "text": text})
        done = {**item, "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}
        self._event("response.output_item.done", {"type": "response.output_item.done", "output_index": index,
                                                  "item": done})
        return done

    def _responses_call(self, index: int, decision: dict[str, Any]) -> dict[str, Any]:
        arguments = json.dumps(decision["args"])
        item = {"type": "function_call", "id": _id("fc"), "call_id": _id("call"), "name": decision["name"],
                "arguments": "", "status": "in_progress"}
        if decision.get("namespace"):
            item["namespace"] = decision["namespace"]
        self._event("response.output_item.added", {"type": "response.output_item.added", "output_index": index,
                                                   "item": item})
        self._event("response.function_call_arguments.delta", {
            "type": "response.function_call_arguments.delta", "item_id": item["id"], "output_index": index,
            "delta": arguments})
        self._event("response.function_call_arguments.done", {
            "type": "response.function_call_arguments.done", "item_id": item["id"], "output_index": index,
            "arguments": arguments})
        done = {**item, "arguments": arguments, "status": "completed"}
        self._event("response.output_item.done", {"type": "response.output_item.done", "output_index": index,
                                                  "item": done})
        return done

    # -- Anthropic Messages (claude) --

    def serve_messages(self, body: dict[str, Any], decision: dict[str, Any]) -> None:
        blocks: list[tuple[str, Any]] = []
        if decision.get("reasoning"):
            blocks.append(("thinking", decision["reasoning"]))
        if decision["kind"] == "tool":
            if decision.get("text"):
                blocks.append(("text", [decision["text"]]))
            blocks.append(("tool_use", decision))
        else:
            blocks.append(("text", split_text(decision["text"], decision["chunks"])))
        stop = "tool_use" if decision["kind"] == "tool" else "end_turn"
        message_id = _id("msg")
        usage = {"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        model = body.get("model", MODEL)
        if not body.get("stream"):
            content = [{"type": "text", "text": "".join(v)} if kind == "text" else
                       {"type": "thinking", "thinking": v, "signature": "mock"} if kind == "thinking" else
                       {"type": "tool_use", "id": _id("toolu"), "name": v["name"], "input": v["args"]}
                       for kind, v in blocks]
            return self._json(200, {"id": message_id, "type": "message", "role": "assistant", "model": model,
                                    "content": content, "stop_reason": stop, "stop_sequence": None, "usage": usage})
        self._stream_open()
        self._event("message_start", {"type": "message_start", "message": {
            "id": message_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 1}}})
        for index, (kind, value) in enumerate(blocks):
            if kind == "thinking":
                self._event("content_block_start", {"type": "content_block_start", "index": index,
                                                     "content_block": {"type": "thinking", "thinking": ""}})
                self._event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                     "delta": {"type": "thinking_delta", "thinking": value}})
                self._event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                     "delta": {"type": "signature_delta", "signature": "mock"}})
            elif kind == "text":
                self._event("content_block_start", {"type": "content_block_start", "index": index,
                                                     "content_block": {"type": "text", "text": ""}})
                for chunk in value:
                    self._event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                         "delta": {"type": "text_delta", "text": chunk}},
                                decision.get("delay", 0.0))
            else:
                self._event("content_block_start", {"type": "content_block_start", "index": index, "content_block": {
                    "type": "tool_use", "id": _id("toolu"), "name": value["name"], "input": {}}})
                self._event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                    "type": "input_json_delta", "partial_json": json.dumps(value["args"])}})
            self._event("content_block_stop", {"type": "content_block_stop", "index": index})
        self._event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                       "usage": {"output_tokens": 10}})
        self._event("message_stop", {"type": "message_stop"})
        self._stream_close()

    # -- OpenAI Chat Completions (hermes, kimi) --

    def serve_chat(self, body: dict[str, Any], decision: dict[str, Any]) -> None:
        completion_id = _id("chatcmpl")
        created = int(time.time())
        model = body.get("model", MODEL)
        usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
        call = None
        if decision["kind"] == "tool":
            call = {"id": _id("call"), "type": "function",
                    "function": {"name": decision["name"], "arguments": json.dumps(decision["args"])}}
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": decision.get("text")}
            if call:
                message["tool_calls"] = [call]
            return self._json(200, {"id": completion_id, "object": "chat.completion", "created": created,
                                    "model": model, "usage": usage, "choices": [{
                                        "index": 0, "message": message,
                                        "finish_reason": "tool_calls" if call else "stop"}]})
        base = {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model}

        def chunk(delta: dict[str, Any], finish: str | None = None, pause: float = 0.0, **extra: Any) -> None:
            self._event(None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra},
                        pause)

        self._stream_open()
        chunk({"role": "assistant", "content": ""})
        if decision.get("reasoning"):
            chunk({"reasoning_content": decision["reasoning"]})
        if call:
            if decision.get("text"):
                chunk({"content": decision["text"]})
            chunk({"tool_calls": [{"index": 0, **call}]})
        else:
            for piece in split_text(decision["text"], decision["chunks"]):
                chunk({"content": piece}, pause=decision["delay"])
        chunk({}, "tool_calls" if call else "stop", usage=usage)
        self._event(None, "[DONE]")
        self._stream_close()


def _model_entry() -> dict[str, Any]:
    return {"id": MODEL, "object": "model", "created": 0, "owned_by": "groupx-mock", "type": "model",
            "display_name": "GroupX mock", "context_length": 256000}


class MockServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, log_path: str):
        super().__init__(("127.0.0.1", port), Handler)
        self.script = Script()
        self.log = Log(log_path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="GroupX scripted mock model server")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", required=True, help="JSONL file every request is appended to")
    parser.add_argument("--script", help="JSON script file (rules and default)")
    args = parser.parse_args(argv)
    server = MockServer(args.port, args.log)
    if args.script:
        with open(args.script, encoding="utf-8") as f:
            server.script.load(json.load(f))
    print(f"mock-model listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever(poll_interval=0.2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""GroupX's scripted mock model server for the real-CLI conformance tier (docs/CONFORMANCE.md). Stdlib only.

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

MODEL = "mock-model"

try:  # imported by the tests as a package module, run by the harness as a script
    from tests.realcli.mock_requests import (
        AUX_STEPS,
        Script,
        plan,
        result_json,
        split_text,
        view_chat,
        view_messages,
        view_responses,
    )
except ImportError:
    from mock_requests import (  # type: ignore[no-redef]
        AUX_STEPS,
        Script,
        plan,
        result_json,
        split_text,
        view_chat,
        view_messages,
        view_responses,
    )

__all__ = ["MockServer", "main", "result_json"]


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
        self.server.log.write(
            {
                "t": time.time(),
                "method": self.command,
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body,
                **extra,
            }
        )

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
        handlers = {
            "/v1/responses": (view_responses, self.serve_responses),
            "/v1/messages": (view_messages, self.serve_messages),
            "/v1/chat/completions": (view_chat, self.serve_chat),
        }
        if path.endswith("/messages/count_tokens"):
            self._record(body, api="probe")
            return self._json(200, {"input_tokens": 100})
        for suffix, (make_view, reply) in handlers.items():
            if path.endswith(suffix) and isinstance(body, dict):
                view = make_view(body)
                auxiliary = not view.tools  # a title or summary request on the side: never scripted
                rule, steps = (None, AUX_STEPS) if auxiliary else self.server.script.match(view.api, view.current)
                decision = plan(view, steps)
                self._record(
                    body,
                    api=view.api,
                    current=view.current,
                    rule=rule,
                    step=view.rounds,
                    aux=auxiliary,
                    tool_result=view.tool_result,
                    reply={k: v for k, v in decision.items() if k != "delay"},
                )
                try:
                    if decision["kind"] == "error":
                        return self._json(
                            decision["status"], {"error": {"type": "mock_error", "message": decision["message"]}}
                        )
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
        self._event(
            "response.created",
            {
                "type": "response.created",
                "response": {
                    "id": response_id,
                    "object": "response",
                    "status": "in_progress",
                    "model": body.get("model"),
                    "output": [],
                },
            },
        )
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
            output.append(
                self._responses_message(index, split_text(decision["text"], decision["chunks"]), decision["delay"])
            )
        usage = {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 10,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 110,
        }
        self._event(
            "response.completed",
            {
                "type": "response.completed",
                "response": {
                    "id": response_id,
                    "object": "response",
                    "status": "completed",
                    "model": body.get("model"),
                    "output": output,
                    "usage": usage,
                },
            },
        )
        self._stream_close()

    def _responses_reasoning(self, index: int, text: str) -> dict[str, Any]:
        item = {"type": "reasoning", "id": _id("rs"), "summary": []}
        self._event(
            "response.output_item.added", {"type": "response.output_item.added", "output_index": index, "item": item}
        )
        self._event(
            "response.reasoning_summary_part.added",
            {
                "type": "response.reasoning_summary_part.added",
                "item_id": item["id"],
                "output_index": index,
                "summary_index": 0,
                "part": {"type": "summary_text", "text": ""},
            },
        )
        self._event(
            "response.reasoning_summary_text.delta",
            {
                "type": "response.reasoning_summary_text.delta",
                "item_id": item["id"],
                "output_index": index,
                "summary_index": 0,
                "delta": text,
            },
        )
        self._event(
            "response.reasoning_summary_text.done",
            {
                "type": "response.reasoning_summary_text.done",
                "item_id": item["id"],
                "output_index": index,
                "summary_index": 0,
                "text": text,
            },
        )
        done = {**item, "summary": [{"type": "summary_text", "text": text}]}
        self._event(
            "response.output_item.done", {"type": "response.output_item.done", "output_index": index, "item": done}
        )
        return done

    def _responses_message(self, index: int, chunks: list[str], delay: float) -> dict[str, Any]:
        item = {"type": "message", "id": _id("msg"), "role": "assistant", "status": "in_progress", "content": []}
        self._event(
            "response.output_item.added", {"type": "response.output_item.added", "output_index": index, "item": item}
        )
        self._event(
            "response.content_part.added",
            {
                "type": "response.content_part.added",
                "item_id": item["id"],
                "output_index": index,
                "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []},
            },
        )
        for chunk in chunks:
            self._event(
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": 0,
                    "delta": chunk,
                },
                delay,
            )
        text = "".join(chunks)
        self._event(
            "response.output_text.done",
            {
                "type": "response.output_text.done",
                "item_id": item["id"],
                "output_index": index,
                "content_index": 0,
                "text": text,
            },
        )
        done = {**item, "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}
        self._event(
            "response.output_item.done", {"type": "response.output_item.done", "output_index": index, "item": done}
        )
        return done

    def _responses_call(self, index: int, decision: dict[str, Any]) -> dict[str, Any]:
        arguments = json.dumps(decision["args"])
        item = {
            "type": "function_call",
            "id": _id("fc"),
            "call_id": _id("call"),
            "name": decision["name"],
            "arguments": "",
            "status": "in_progress",
        }
        if decision.get("namespace"):
            item["namespace"] = decision["namespace"]
        self._event(
            "response.output_item.added", {"type": "response.output_item.added", "output_index": index, "item": item}
        )
        self._event(
            "response.function_call_arguments.delta",
            {
                "type": "response.function_call_arguments.delta",
                "item_id": item["id"],
                "output_index": index,
                "delta": arguments,
            },
        )
        self._event(
            "response.function_call_arguments.done",
            {
                "type": "response.function_call_arguments.done",
                "item_id": item["id"],
                "output_index": index,
                "arguments": arguments,
            },
        )
        done = {**item, "arguments": arguments, "status": "completed"}
        self._event(
            "response.output_item.done", {"type": "response.output_item.done", "output_index": index, "item": done}
        )
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
        usage = {
            "input_tokens": 100,
            "output_tokens": 10,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        model = body.get("model", MODEL)
        if not body.get("stream"):
            content = [
                {"type": "text", "text": "".join(v)}
                if kind == "text"
                else {"type": "thinking", "thinking": v, "signature": "mock"}
                if kind == "thinking"
                else {"type": "tool_use", "id": _id("toolu"), "name": v["name"], "input": v["args"]}
                for kind, v in blocks
            ]
            return self._json(
                200,
                {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": content,
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": usage,
                },
            )
        self._stream_open()
        self._event(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {**usage, "output_tokens": 1},
                },
            },
        )
        for index, (kind, value) in enumerate(blocks):
            if kind == "thinking":
                self._event(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "thinking", "thinking": ""},
                    },
                )
                self._event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "thinking_delta", "thinking": value},
                    },
                )
                self._event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "signature_delta", "signature": "mock"},
                    },
                )
            elif kind == "text":
                self._event(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                )
                for chunk in value:
                    self._event(
                        "content_block_delta",
                        {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": chunk}},
                        decision.get("delay", 0.0),
                    )
            else:
                self._event(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "tool_use", "id": _id("toolu"), "name": value["name"], "input": {}},
                    },
                )
                self._event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": json.dumps(value["args"])},
                    },
                )
            self._event("content_block_stop", {"type": "content_block_stop", "index": index})
        self._event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 10},
            },
        )
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
            call = {
                "id": _id("call"),
                "type": "function",
                "function": {"name": decision["name"], "arguments": json.dumps(decision["args"])},
            }
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": decision.get("text")}
            if call:
                message["tool_calls"] = [call]
            return self._json(
                200,
                {
                    "id": completion_id,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "usage": usage,
                    "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if call else "stop"}],
                },
            )
        base = {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model}

        def chunk(delta: dict[str, Any], finish: str | None = None, pause: float = 0.0, **extra: Any) -> None:
            self._event(
                None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}, pause
            )

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
    return {
        "id": MODEL,
        "object": "model",
        "created": 0,
        "owned_by": "groupx-mock",
        "type": "model",
        "display_name": "GroupX mock",
        "context_length": 256000,
    }


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

"""JSON-RPC 2.0 over a ``JsonLineProcess``, in the two dialects of NATIVE_PROTOCOLS §1.5.

- ``acp``: every inbound message must carry ``"jsonrpc": "2.0"``; we send it on every frame.
- ``codex``: the header is omitted on the wire; an inbound header, if present, must be "2.0".

Outgoing request ids are strings (``<prefix><n>``). Inbound messages are classified strictly:
``method`` + ``id`` is a server request, ``method`` alone a notification, ``id`` with exactly one
of ``result``/``error`` a response; anything else is fatal. Once the connection is lost (garbage,
EOF, process exit, a stdin the child closed) every pending request fails with the same
``ConnectionLost`` and later calls raise it at once.

A response to an id we sent and stopped waiting for (timed out, forgotten) is only logged; a
response to an id we never sent is a protocol violation (D23): the CLI answered something
it was never asked, so whatever it owes us (a prompt's terminal) is not coming.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Literal

from .base import PROTOCOL_INVALID_MESSAGE
from .process import FrameError, JsonLineProcess, ProcessClosedError

log = logging.getLogger(__name__)

Dialect = Literal["acp", "codex"]

METHOD_NOT_FOUND = -32601
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603

# After the child exits, how long stdout may stay open (a grandchild holding it) before the
# connection is declared lost anyway. Frames written just before the exit are still read.
EXIT_EOF_GRACE_S = 1.0
# A child that exits closes its stdin too; for this long a closed stdin waits for the exit, so an
# exit is reported as one (with its code) and only a child that lives on is a closed stdin.
STDIN_EXIT_GRACE_S = 0.5


class JsonRpcError(Exception):
    """An error response, received from the peer or raised by a handler to be sent back."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(f"JSON-RPC error {code}: {message}")
        self.code = code
        self.message = message
        self.data = data


class RequestTimeout(TimeoutError):
    def __init__(self, method: str, timeout: float):
        super().__init__(f"{method} got no response within {timeout:g} s")
        self.method = method
        self.timeout = timeout


class ConnectionLost(Exception):
    """The connection is unusable. ``code`` is the GroupX error code a driver would report."""

    code = PROTOCOL_INVALID_MESSAGE

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class ProtocolViolation(ConnectionLost):
    """Garbage on stdout or a message that fits no JSON-RPC shape."""

    code = PROTOCOL_INVALID_MESSAGE


class ProcessExited(ConnectionLost):
    """stdout reached EOF or the child exited. ``expected`` is True after ``mark_closing``.

    An unexpected exit is the code every driver reports for it (PROTOCOL §5, docs/DECISIONS.md
    D38): the process is gone, so the session is replaced before the next turn."""

    code = PROTOCOL_INVALID_MESSAGE

    def __init__(self, message: str, *, returncode: int | None, expected: bool = False):
        super().__init__(message)
        self.returncode = returncode
        self.expected = expected


class StdinClosed(ProcessExited):
    """The child closed its stdin and lives on: nothing we write reaches it any more."""


Pace = Callable[[], Awaitable[None] | None]  # None: read on at once


class FrameReader:
    """Reads a child's stdout frame by frame into ``dispatch`` and turns the end of it into one
    ConnectionLost for ``fail``: garbage is a ProtocolViolation, EOF or the child's exit a
    ProcessExited with the exit code (``expected`` while ``closing()``), a stdin the child closed
    a StdinClosed. Shared by the JSON-RPC client and the Claude session, whose wire is not
    JSON-RPC but ends the same way.

    ``pace`` is called before each frame is read, and what it returns, unless None, awaited:
    while the active turn's queue is full that does not return, the pipe fills and the child
    blocks on its own write (D23). It never waits for a response, so a request in flight
    cannot deadlock on it."""

    def __init__(
        self,
        process: JsonLineProcess,
        *,
        dispatch: Callable[[dict[str, Any]], None],
        fail: Callable[[ConnectionLost], None],
        closing: Callable[[], bool],
        label: str,
        pace: Pace | None = None,
    ):
        self.process = process
        self._dispatch = dispatch
        self._fail = fail
        self._closing = closing
        self._label = label  # names the reader in the log: "JSON-RPC", "claude"
        self._pace = pace
        self._reader: asyncio.Task[None] | None = None
        self._exit_watch: asyncio.Task[None] | None = None
        self._stdin_watch: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._reader is None:
            self._reader = asyncio.ensure_future(self._read_loop())
            self._exit_watch = asyncio.ensure_future(self._watch_exit())
            self._stdin_watch = asyncio.ensure_future(self._watch_stdin())

    def stop(self) -> None:
        """Cancel the reading tasks, except the one calling (it is already on its way out)."""
        current = asyncio.current_task()
        for task in (self._reader, self._exit_watch, self._stdin_watch):
            if task is not None and task is not current and not task.done():
                task.cancel()

    def exit_error(self, what: str) -> ProcessExited:
        rc = self.process.returncode
        detail = f"{what} (exit code {rc})" if rc is not None else what
        return ProcessExited(detail, returncode=rc, expected=self._closing())

    async def _read_loop(self) -> None:
        try:
            while True:
                if self._pace is not None and (held := self._pace()) is not None:
                    await held
                frame = await self.process.read_frame()
                if frame is None:
                    break
                self._dispatch(frame)
        except asyncio.CancelledError:
            raise
        except FrameError as exc:
            self._fail(ProtocolViolation(str(exc)))
            return
        except ProtocolViolation as exc:
            self._fail(exc)
            return
        except Exception as exc:
            log.exception("%s reader failed", self._label)
            self._fail(ProtocolViolation(f"reader failed: {exc}"))
            return
        # EOF: report the exit code when the child is already (or about to be) gone.
        await self.process.wait_exit(EXIT_EOF_GRACE_S)
        self._fail(self.exit_error("stdout closed"))

    async def _watch_exit(self) -> None:
        await self.process.wait()
        assert self._reader is not None
        try:
            await asyncio.wait_for(asyncio.shield(self._reader), EXIT_EOF_GRACE_S)
        except TimeoutError:
            self._fail(self.exit_error("process exited with stdout still open"))

    async def _watch_stdin(self) -> None:
        await self.process.wait_stdin_lost()
        if self.process.closing or self._closing():
            return  # we closed it
        if await self.process.wait_exit(STDIN_EXIT_GRACE_S):
            return  # the child exited: the exit path reports it with its code
        self._fail(StdinClosed("the CLI closed its stdin and keeps running", returncode=None, expected=self._closing()))


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class InboundRequest:
    """A request from the CLI. A handler may answer it itself (``respond``/``respond_error``)
    when it must send something right after the reply; otherwise the client answers with the
    handler's return value."""

    def __init__(self, client: JsonRpcClient, request_id: str | int, method: str, params: Any):
        self._client = client
        self.id = request_id
        self.method = method
        self.params = params
        self.responded = False

    async def respond(self, result: Any) -> None:
        await self._send({"id": self.id, "result": result})

    async def respond_error(self, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        await self._send({"id": self.id, "error": error})

    async def _send(self, frame: dict[str, Any]) -> None:
        if self.responded:
            return
        self.responded = True
        try:
            await self._client._write(frame)
        finally:
            self._client._active_inbound.discard((type(self.id), self.id))


RequestHandler = Callable[[InboundRequest], Any]  # returns a result or an awaitable of one
NotificationHandler = Callable[[str, Any], None]


class PendingRequest:
    """A request already written; await it for the result (raises JsonRpcError/ConnectionLost)."""

    def __init__(self, client: JsonRpcClient, request_id: str, method: str, future: asyncio.Future[Any]):
        self._client = client
        self.id = request_id
        self.method = method
        self.future = future

    def __await__(self) -> Generator[Any, None, Any]:
        return self.future.__await__()

    def done(self) -> bool:
        return self.future.done()

    def forget(self) -> None:
        """Stop waiting; a response arriving later is logged as late."""
        self._client._pending.pop(self.id, None)
        if not self.future.done():
            self.future.cancel()


class JsonRpcClient:
    def __init__(
        self,
        process: JsonLineProcess,
        *,
        dialect: Dialect,
        id_prefix: str,
        on_request: RequestHandler | None = None,
        on_notification: NotificationHandler | None = None,
        on_lost: Callable[[ConnectionLost], None] | None = None,
        pace: Pace | None = None,
    ) -> None:
        if dialect not in ("acp", "codex"):
            raise ValueError(f"unknown JSON-RPC dialect {dialect!r}")
        self.process = process
        self.dialect = dialect
        self.id_prefix = id_prefix
        self.on_request = on_request
        self.on_notification = on_notification
        self.on_lost = on_lost
        self._counter = 0
        self._pending: dict[str, tuple[str, asyncio.Future[Any]]] = {}
        self._active_inbound: set[tuple[type, Any]] = set()
        self._background: set[asyncio.Task[Any]] = set()
        self._lost: ConnectionLost | None = None
        self._lost_event = asyncio.Event()
        self._closing = False
        self._frames = FrameReader(
            process,
            dispatch=self._dispatch,
            fail=self._fail,
            closing=lambda: self._closing,
            label="JSON-RPC",
            pace=pace,
        )

    def start(self) -> None:
        self._frames.start()

    # -- state ----------------------------------------------------------------------------------

    @property
    def lost(self) -> ConnectionLost | None:
        return self._lost

    async def drain_replies(self, timeout: float) -> None:
        """Wait (bounded) for replies still being written, e.g. before closing the process."""
        if self._background:
            await asyncio.wait(set(self._background), timeout=timeout)

    def mark_closing(self) -> None:
        """We are closing the process ourselves: its exit is expected, not a crash."""
        self._closing = True

    async def wait_lost(self) -> ConnectionLost:
        await self._lost_event.wait()
        assert self._lost is not None
        return self._lost

    # -- outgoing -------------------------------------------------------------------------------

    async def send_request(self, method: str, params: Any = None) -> PendingRequest:
        """Write a request and return at once; the response is awaited through the result."""
        self._raise_if_lost()
        self._counter += 1
        request_id = f"{self.id_prefix}{self._counter}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        # Whoever forgets a request must not trigger "exception was never retrieved" noise.
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._pending[request_id] = (method, future)
        frame: dict[str, Any] = {"id": request_id, "method": method}
        if params is not None:
            frame["params"] = params
        try:
            await self._write(frame)
        except BaseException:
            self._pending.pop(request_id, None)
            future.cancel()
            raise
        return PendingRequest(self, request_id, method, future)

    async def request(self, method: str, params: Any = None, timeout: float | None = None) -> Any:
        """Send a request and wait for its result; ``timeout`` in seconds (None: no limit)."""
        pending = await self.send_request(method, params)
        try:
            return await asyncio.wait_for(asyncio.shield(pending.future), timeout)
        except TimeoutError:
            pending.forget()
            raise RequestTimeout(method, timeout or 0) from None

    async def notify(self, method: str, params: Any = None) -> None:
        self._raise_if_lost()
        frame: dict[str, Any] = {"method": method}
        if params is not None:
            frame["params"] = params
        await self._write(frame)

    async def _write(self, frame: dict[str, Any]) -> None:
        if self.dialect == "acp":
            frame = {"jsonrpc": "2.0", **frame}
        try:
            await self.process.write_frame(frame)
        except ProcessClosedError as exc:
            raise self._lost or ProcessExited(
                str(exc), returncode=self.process.returncode, expected=self._closing
            ) from exc

    def _raise_if_lost(self) -> None:
        if self._lost is not None:
            raise self._lost

    # -- incoming -------------------------------------------------------------------------------

    def _fail(self, exc: ConnectionLost) -> None:
        if self._lost is not None:
            return
        self._lost = exc
        self._lost_event.set()
        log.log(
            logging.INFO if getattr(exc, "expected", False) else logging.WARNING,
            "JSON-RPC connection to pid %s lost: %s",
            self.process.pid,
            exc,
        )
        pending, self._pending = self._pending, {}
        for _method, future in pending.values():
            if not future.done():
                future.set_exception(exc)
        self._frames.stop()
        if self.on_lost is not None:
            try:
                self.on_lost(exc)
            except Exception:
                log.exception("on_lost callback failed")

    def _dispatch(self, msg: dict[str, Any]) -> None:
        self._check_header(msg)
        if "method" in msg:
            method = msg["method"]
            if not isinstance(method, str) or not method:
                raise ProtocolViolation(f"invalid method {method!r}")
            if "result" in msg or "error" in msg:
                raise ProtocolViolation(f"message with method {method!r} also carries result/error")
            params = msg.get("params")
            if params is not None and not isinstance(params, dict | list):
                raise ProtocolViolation(f"{method}: params must be an object or an array")
            if "id" in msg:
                if not _valid_id(msg["id"]):
                    raise ProtocolViolation(f"{method}: invalid request id {msg['id']!r}")
                self._on_server_request(msg["id"], method, params)
            else:
                self._on_notification(method, params)
            return
        has_result, has_error = "result" in msg, "error" in msg
        if "id" in msg and has_result != has_error:
            if not _valid_id(msg["id"]):
                raise ProtocolViolation(f"response with invalid id {msg['id']!r}")
            self._on_response(msg["id"], msg)
            return
        raise ProtocolViolation(f"unclassifiable JSON-RPC message with keys {sorted(msg)[:8]}")

    def _check_header(self, msg: dict[str, Any]) -> None:
        if "jsonrpc" in msg:
            if msg["jsonrpc"] != "2.0":
                raise ProtocolViolation(f"wrong jsonrpc header {msg['jsonrpc']!r}")
        elif self.dialect == "acp":
            raise ProtocolViolation('ACP message without "jsonrpc": "2.0"')

    def _on_response(self, response_id: str | int, msg: dict[str, Any]) -> None:
        entry = self._pending.get(response_id) if isinstance(response_id, str) else None
        if entry is None:
            if not self._was_sent(response_id):
                raise ProtocolViolation(f"response to request id {response_id!r:.80}, which was never sent")
            log.info("ignoring a late response to request id %r", response_id)
            return
        method, future = entry
        if "error" in msg:
            error = msg["error"]
            code = error.get("code") if isinstance(error, dict) else None
            if not isinstance(code, int) or isinstance(code, bool):
                # Still pending, so _fail hands this violation to the request too.
                raise ProtocolViolation(f"{method}: malformed error object {error!r:.200}")
            message = error.get("message")
            outcome: Any = JsonRpcError(code, message if isinstance(message, str) else "", error.get("data"))
        else:
            outcome = None
        del self._pending[str(response_id)]  # a str: only str ids are pending
        if future.done():
            return
        if outcome is not None:
            future.set_exception(outcome)
        else:
            future.set_result(msg["result"])

    def _was_sent(self, response_id: str | int) -> bool:
        """Ours are ``<prefix><n>`` for n = 1..counter, so every id ever sent is known exactly,
        however old, with no memory kept per request."""
        if not isinstance(response_id, str) or not response_id.startswith(self.id_prefix):
            return False
        number = response_id[len(self.id_prefix) :]
        return number.isascii() and number.isdigit() and not number.startswith("0") and int(number) <= self._counter

    def _on_notification(self, method: str, params: Any) -> None:
        if self.on_notification is None:
            return
        try:
            self.on_notification(method, params)
        except ProtocolViolation:
            raise
        except Exception:
            log.exception("notification handler failed for %s", method)

    def _on_server_request(self, request_id: str | int, method: str, params: Any) -> None:
        key = (type(request_id), request_id)
        request = InboundRequest(self, request_id, method, params)
        if key in self._active_inbound:
            request.responded = True  # the original still owns its reply
            self._spawn(
                self._write(
                    {
                        "id": request_id,
                        "error": {"code": INVALID_REQUEST, "message": f"duplicate active request id {request_id!r}"},
                    }
                )
            )
            return
        self._active_inbound.add(key)
        if self.on_request is None:
            self._spawn(request.respond_error(METHOD_NOT_FOUND, f"Method not found: {method}"))
            return
        try:
            outcome = self.on_request(request)
        except JsonRpcError as exc:
            self._spawn(request.respond_error(exc.code, exc.message, exc.data))
            return
        except Exception:
            log.exception("request handler failed for %s", method)
            self._spawn(request.respond_error(INTERNAL_ERROR, "Internal error"))
            return
        self._spawn(self._finish_request(request, outcome))

    async def _finish_request(self, request: InboundRequest, outcome: Any) -> None:
        try:
            result = await outcome if inspect.isawaitable(outcome) else outcome
        except JsonRpcError as exc:
            await request.respond_error(exc.code, exc.message, exc.data)
            return
        except ConnectionLost:
            return
        except Exception:
            log.exception("request handler failed for %s", request.method)
            await request.respond_error(INTERNAL_ERROR, "Internal error")
            return
        await request.respond(result)

    def _spawn(self, coro: Awaitable[Any]) -> None:
        """Run a reply in the background, in creation order (so replies keep wire order)."""

        async def guarded() -> None:
            try:
                await coro
            except ConnectionLost as exc:
                log.debug("reply not sent: %s", exc)

        task = asyncio.ensure_future(guarded())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

"""``groupx_site/handler.py``'s API path: Django's request handling with no thread hop (D66, D70)."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from django.core import signals
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.base import BaseHandler

from groupx_site.handler import GroupXASGIHandler

# sha256 of ``inspect.getsource(ASGIHandler.handle)`` in Django 5.2, which ``handle_api`` copies.
DJANGO_HANDLE_SHA256 = "98faeb5bef800331e6a8002fbc96b30e4122a23438ae45a047190a531ea11323"
# sha256 of ``inspect.getsource(BaseHandler.get_response_async)`` in Django 5.2, which
# ``GroupXASGIHandler.get_response_async`` copies (D70).
DJANGO_GET_RESPONSE_ASYNC_SHA256 = "ad82c920df0cebbb52b1ebafe6ab8b5541f200c39fa954a148b01f60725b715b"


async def request_missing_route() -> tuple[int, int]:
    """A GET of an API route that does not exist through the handler: (the loop's thread, the status)."""
    return await api_request("GET", "/api/no-such-route")


async def api_request(method: str, path: str, body: bytes = b"", headers: tuple = ()) -> tuple[int, int]:
    """One request through the handler: (the loop's thread, the response's status)."""
    sent = []
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive():
        if messages:
            return messages.pop(0)
        await asyncio.Event().wait()  # no disconnect: the response ends the request

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "raw_path": path.encode(),
             "query_string": b"", "headers": [(b"host", b"127.0.0.1:4310"), *headers], "server": ("127.0.0.1", 4310),
             "client": ("127.0.0.1", 50000), "scheme": "http", "root_path": ""}
    await GroupXASGIHandler()(scope, receive, send)
    return threading.get_ident(), sent[0]["status"]


class CountingExecutor(ThreadPoolExecutor):
    """The loop's default executor, counting what is handed to it (``sync_to_async(thread_sensitive=False)``)."""

    submitted = 0

    def submit(self, *args, **kwargs):
        self.submitted += 1
        return super().submit(*args, **kwargs)


def refused_post(executor: CountingExecutor) -> tuple[int, int]:
    """A message post the API refuses (not JSON: the write guard's 415), with ``executor`` as the
    loop's default executor. The refusal is a response, as a 429 ``QUEUE_CAPACITY_REACHED`` is, not
    an exception Django turns into one (that path, ``response_for_exception``, keeps Django's hop)."""

    async def run() -> tuple[int, int]:
        asyncio.get_running_loop().set_default_executor(executor)
        return await api_request("POST", "/api/messages", b"hello", ((b"content-type", b"text/plain"),))

    return asyncio.run(run())


class Recorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_an_api_refusal_the_request_logger_drops_is_answered_without_a_thread_hop():
    logger = logging.getLogger("django.request")
    level = logger.level
    logger.setLevel(logging.ERROR)  # settings.LOGGING's: a 4xx warning is dropped
    try:
        executor = CountingExecutor(max_workers=1)
        _loop_thread, status = refused_post(executor)
    finally:
        logger.setLevel(level)
    assert status == 415
    assert executor.submitted == 0


def test_an_api_refusal_the_request_logger_writes_is_still_logged_off_the_loops_thread():
    logger, recorder = logging.getLogger("django.request"), Recorder()
    level = logger.level
    logger.setLevel(logging.WARNING)
    logger.addHandler(recorder)
    try:
        executor = CountingExecutor(max_workers=1)
        loop_thread, status = refused_post(executor)
    finally:
        logger.removeHandler(recorder)
        logger.setLevel(level)
    assert status == 415
    assert [record.getMessage() for record in recorder.records] == ["Unsupported Media Type: /api/messages"]
    assert recorder.records[0].thread != loop_thread  # a handler's write may block: not on the loop
    assert executor.submitted == 1


def test_djangos_handle_is_still_the_one_the_api_handler_copies():
    # When this fails, Django's ASGIHandler.handle changed: compare it with handle_api, carry the
    # change over (keeping the signals and response.close() on the loop's thread), update the hash.
    source = inspect.getsource(ASGIHandler.handle)
    assert hashlib.sha256(source.encode()).hexdigest() == DJANGO_HANDLE_SHA256, source


def test_djangos_get_response_async_is_still_the_one_the_handler_copies():
    # When this fails, Django's BaseHandler.get_response_async changed: compare it with
    # GroupXASGIHandler.get_response_async, carry the change over, update the hash.
    source = inspect.getsource(BaseHandler.get_response_async)
    assert hashlib.sha256(source.encode()).hexdigest() == DJANGO_GET_RESPONSE_ASYNC_SHA256, source


def test_the_request_signals_can_be_sent_from_the_event_loops_thread():
    # Signal.send hands an async receiver to async_to_sync, which refuses to run on a running loop:
    # an async receiver connected to either signal makes this fail before it breaks every request.
    async def send_both():
        signals.request_started.send(sender=GroupXASGIHandler, scope={"type": "http", "path": "/api/x"})
        signals.request_finished.send(sender=GroupXASGIHandler)

    asyncio.run(send_both())


def test_an_api_requests_signals_run_on_the_event_loops_thread():
    threads: dict[str, int] = {}

    def on_started(**_kwargs):
        threads["started"] = threading.get_ident()

    def on_finished(**_kwargs):
        threads["finished"] = threading.get_ident()

    signals.request_started.connect(on_started)
    signals.request_finished.connect(on_finished)
    try:
        loop_thread, status = asyncio.run(request_missing_route())
    finally:
        signals.request_started.disconnect(on_started)
        signals.request_finished.disconnect(on_finished)
    assert status == 404  # the API's own 404 (groupx_site/middleware.py), answered through the handler
    assert threads == {"started": loop_thread, "finished": loop_thread}

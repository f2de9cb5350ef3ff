"""``groupx_site/speedups/handler.py``'s API path: Django's request handling with no thread hop (D66, D70)."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from django.core import signals
from django.core.cache import CacheHandler, close_caches
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.locmem import LocMemCache
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.base import BaseHandler
from django.db import close_old_connections, connections, reset_queries
from django.dispatch import Signal
from django.http import HttpResponseBase

from groupx_site.speedups.handler import GroupXASGIHandler, left_out_on_the_loop_thread, send_from_loop_thread
from tests.unit.collector import garbage_after

# sha256 of ``inspect.getsource(ASGIHandler.handle)`` in Django 5.2, which ``handle_api`` copies.
DJANGO_HANDLE_SHA256 = "98faeb5bef800331e6a8002fbc96b30e4122a23438ae45a047190a531ea11323"
# sha256 of ``inspect.getsource(BaseHandler.get_response_async)`` in Django 5.2, which
# ``GroupXASGIHandler.get_response_async`` copies (D70).
DJANGO_GET_RESPONSE_ASYNC_SHA256 = "ad82c920df0cebbb52b1ebafe6ab8b5541f200c39fa954a148b01f60725b715b"

# sha256 of the source of the Django code ``send_from_loop_thread`` and ``close_response`` rely on
# (Django 5.2): how a signal finds and calls its receivers, what the two receivers it leaves out
# do, and ``HttpResponseBase.close``, which ``close_response`` copies (D73).
DJANGO_SIGNAL_CODE_SHA256 = {
    Signal.send: "30474fb27baa394646f376f62846e395ff57231d554f71cb96217cedccefac5d",
    Signal._live_receivers: "0a7af5d851f7fd8789bc95621f84ff0289b143671344692da26c68903a79caff",
    HttpResponseBase.close: "84589f5b23acbb23aa9010f3506ef411b72b1053f2fc2764590e2b3bf3470438",
    close_old_connections: "c352dd45e8333c97d83fb0905f187e31475cb3d8bb9308611077febb6e21deb6",
    reset_queries: "9989bcde56b2f76a5f82e3e24bccd1808759ca6ae72b501470e171628f1fe712",
    # D76: close_caches only calls each cache in use's close, and BaseCache.close does nothing
    close_caches: "abe7badf0640b1466b5352dffad178f043f14c2dfab96eabb1275b50f4e301a6",
    CacheHandler.close_all: "4faac3895c01a40be9e051bf9b8f3dedbf3dd7e4e91267bc2b0466fc225a31ca",
    BaseCache.close: "d6b55968d67c692264b62545b4da0d700aed8e1cc220ab8ca21993feb9ad2868",
}


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

    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:4310"), *headers],
        "server": ("127.0.0.1", 4310),
        "client": ("127.0.0.1", 50000),
        "scheme": "http",
        "root_path": "",
    }
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
    assert hashlib.sha256(source.encode()).hexdigest() == DJANGO_HANDLE_SHA256, (
        'Django\'s ASGIHandler.handle changed: see docs/UPGRADING.md "Django ASGIHandler.handle"\n' + source
    )


def test_djangos_get_response_async_is_still_the_one_the_handler_copies():
    # When this fails, Django's BaseHandler.get_response_async changed: compare it with
    # GroupXASGIHandler.get_response_async, carry the change over, update the hash.
    source = inspect.getsource(BaseHandler.get_response_async)
    assert hashlib.sha256(source.encode()).hexdigest() == DJANGO_GET_RESPONSE_ASYNC_SHA256, (
        'Django\'s get_response_async changed: see docs/UPGRADING.md "Django BaseHandler.get_response_async"\n' + source
    )


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


def test_the_django_signal_code_the_handler_relies_on_is_the_code_it_was_written_against():
    # When this fails, compare groupx_site/speedups/handler.py's send_from_loop_thread and close_response
    # with the changed Django code, carry the change over, update the hash.
    changed = [
        function.__qualname__
        for function, digest in DJANGO_SIGNAL_CODE_SHA256.items()
        if hashlib.sha256(inspect.getsource(function).encode()).hexdigest() != digest
    ]
    assert changed == [], (
        f'Django changed {changed}: see docs/UPGRADING.md "Django request signals and HttpResponseBase.close"'
    )


def test_the_receivers_left_out_on_the_event_loops_thread_would_find_no_open_connection_there():
    async def request_then_look() -> tuple[int, list]:
        _thread, status = await request_missing_route()
        return status, [alias for alias in connections if connections[alias].connection is not None]

    status, open_connections = asyncio.run(request_then_look())
    assert status == 404
    assert open_connections == []


def test_a_signal_sent_from_the_event_loops_thread_reaches_every_other_receiver_in_order():
    signal, calls = Signal(), []

    def first(**named):
        calls.append(("first", named))

    def second(**named):
        calls.append(("second", named))

    for receiver in (reset_queries, first, close_old_connections, second):
        signal.connect(receiver)
    send_from_loop_thread(signal, GroupXASGIHandler, scope={"path": "/api/x"})
    assert calls == [
        ("first", {"signal": signal, "sender": GroupXASGIHandler, "scope": {"path": "/api/x"}}),
        ("second", {"signal": signal, "sender": GroupXASGIHandler, "scope": {"path": "/api/x"}}),
    ]


def test_close_caches_is_left_out_only_while_every_configured_cache_closes_with_nothing_to_do(settings):
    assert LocMemCache.close is BaseCache.close  # the default cache's close is the no-op pinned above
    assert close_caches in left_out_on_the_loop_thread()
    settings.CACHES = {**settings.CACHES, "other": {"BACKEND": f"{__name__}.ClosingCache"}}
    left_out_on_the_loop_thread.cache_clear()
    try:
        assert close_caches not in left_out_on_the_loop_thread()
    finally:
        left_out_on_the_loop_thread.cache_clear()


class ClosingCache(LocMemCache):
    """A cache whose close does something: close_caches must still reach it."""

    def close(self, **kwargs):
        pass


def test_an_api_request_answered_then_disconnected_leaves_no_reference_cycle_for_the_collector():
    # daphne sends http.disconnect once the response is complete; Django's listener then ends in
    # RequestAborted, whose traceback held handle_api's frame and with it the request (D76).
    async def request_then_disconnect():
        messages = [{"type": "http.request", "body": b"hello", "more_body": False}]
        answered = asyncio.Event()

        async def receive():
            if messages:
                return messages.pop(0)
            await answered.wait()
            return {"type": "http.disconnect"}

        async def send(message):
            if message["type"] == "http.response.body" and not message.get("more_body"):
                answered.set()

        # a post the API refuses (415, not JSON), as it refuses a post at the queue's cap (429)
        scope = {
            "type": "http",
            "method": "POST",
            "path": "/api/messages",
            "raw_path": b"/api/messages",
            "query_string": b"",
            "headers": [(b"host", b"127.0.0.1:4310"), (b"content-type", b"text/plain")],
            "server": ("127.0.0.1", 4310),
            "client": ("127.0.0.1", 50000),
            "scheme": "http",
            "root_path": "",
        }
        await GroupXASGIHandler()(scope, receive, send)

    asyncio.run(request_then_disconnect())  # the first request's imports and caches are not the subject
    left = garbage_after(lambda: asyncio.run(request_then_disconnect()))
    assert {type(garbage).__name__ for garbage in left} & {"ASGIRequest", "RequestAborted", "Task"} == set()

"""``groupx_site/handler.py``'s API path: Django's request handling with no thread hop (D66)."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import threading

from django.core import signals
from django.core.handlers.asgi import ASGIHandler

from groupx_site.handler import GroupXASGIHandler

# sha256 of ``inspect.getsource(ASGIHandler.handle)`` in Django 5.2, which ``handle_api`` copies.
DJANGO_HANDLE_SHA256 = "98faeb5bef800331e6a8002fbc96b30e4122a23438ae45a047190a531ea11323"


def test_djangos_handle_is_still_the_one_the_api_handler_copies():
    # When this fails, Django's ASGIHandler.handle changed: compare it with handle_api, carry the
    # change over (keeping the signals and response.close() on the loop's thread), update the hash.
    source = inspect.getsource(ASGIHandler.handle)
    assert hashlib.sha256(source.encode()).hexdigest() == DJANGO_HANDLE_SHA256, source


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

    async def request() -> tuple[int, int]:
        sent = []
        messages = [{"type": "http.request", "body": b"", "more_body": False}]

        async def receive():
            if messages:
                return messages.pop(0)
            await asyncio.Event().wait()  # no disconnect: the response ends the request

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "method": "GET", "path": "/api/no-such-route", "raw_path": b"/api/no-such-route",
                 "query_string": b"", "headers": [(b"host", b"127.0.0.1:4310")], "server": ("127.0.0.1", 4310),
                 "client": ("127.0.0.1", 50000), "scheme": "http", "root_path": ""}
        await GroupXASGIHandler()(scope, receive, send)
        return threading.get_ident(), sent[0]["status"]

    signals.request_started.connect(on_started)
    signals.request_finished.connect(on_finished)
    try:
        loop_thread, status = asyncio.run(request())
    finally:
        signals.request_started.disconnect(on_started)
        signals.request_finished.disconnect(on_finished)
    assert status == 404  # the API's own 404 (groupx_site/middleware.py), answered through the handler
    assert threads == {"started": loop_thread, "finished": loop_thread}

"""Django's ASGI handler, without a thread hand-off per API request (docs/DECISIONS.md D20, D66).

Django runs each request inside an asgiref ``ThreadSensitiveContext``: the request's sync code
(its ``request_started`` receivers, a sync view, ``response.close()`` with ``request_finished``)
gets a thread created for that request and joined at its end. Pages and the admin keep that.

Every ``/api/`` view is ``async`` and does its database work on ``groupx_site.store.db``'s
long-lived threads, so an API request opens no database connection on any thread Django's
request code runs on. What Django still runs synchronously for it is the two signals' receivers
(``reset_queries`` and ``close_old_connections``, which act on the calling thread's connections
only, and ``reset_urlconf``, ``close_caches``) and ``response.close()``: a few microseconds of work,
each behind a hop to a thread and back (~2 × 60 µs of a post's ~1 ms, D66). ``handle_api`` is
Django's ``ASGIHandler.handle`` with those called on the event loop's thread instead: the
receivers find no connection there (Django refuses database access on it), so they do the same
nothing without the hops. ``tests/unit/test_api_handler.py`` fails when Django's ``handle``
changes, so the copy is compared again.

Two of those receivers, ``reset_queries`` and ``close_old_connections``, walk ``connections.all()``
through asgiref's thread-critical locals to find no connection: ~15 % of the handler's own CPU
(D73). ``send_from_loop_thread`` sends a signal as ``Signal.send`` does, leaving out those two when
Django forbids database work on this thread (no ``DJANGO_ALLOW_ASYNC_UNSAFE``), and
``close_caches`` while every configured cache's ``close`` is the base class's no-op (D76); every
other receiver (``reset_urlconf``, anything connected later) still runs, in order.
``close_response`` is ``HttpResponseBase.close`` with its signal sent so. The test fails when
Django's ``Signal.send``, its receivers' list or ``HttpResponseBase.close`` changes.

Every response with a status of 400 or more (the API's refusals: in a busy room, 429
``QUEUE_CAPACITY_REACHED`` is 15-50 % of the posts) goes through ``log_response`` for the ``django.request``
logger, which Django calls through ``sync_to_async(thread_sensitive=False)``: a thread of the
loop's default executor and a wake-up of the loop, ~60 µs of CPU, to drop a warning the logger is
not enabled for (``settings.LOGGING``: ERROR). ``get_response_async`` calls it on the loop's thread
when the logger drops it (it returns at the level check), through Django's hop when it would
write (D70); the test fails when Django's ``get_response_async`` changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import encodings.unicode_escape  # noqa: F401 (below)
import functools
import logging
import os

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core import signals
from django.core.cache import close_caches
from django.core.cache.backends.base import BaseCache
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.db import close_old_connections, reset_queries
from django.dispatch import Signal
from django.http import HttpResponseBase
from django.urls import set_script_prefix, set_urlconf
from django.utils.log import log_response, request_logger
from django.utils.module_loading import import_string

# ``log_response`` escapes its arguments with the ``unicode_escape`` codec before the logger's level
# check, and the codec's module is imported on first use: it is imported here, with the server, not
# by the first refusal in the middle of traffic (tests/test_request_imports.py, D78).

# They act on the calling thread's database connections only, and on the event loop's thread
# Django opens none (SynchronousOnlyOperation): there they find nothing to clear or close.
NOTHING_TO_DO_ON_THE_LOOP_THREAD = (reset_queries, close_old_connections)
# Unless Django is told to allow database work there (read once: os.environ.get costs ~1 µs).
ASYNC_UNSAFE_ALLOWED = bool(os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE"))


@functools.cache
def left_out_on_the_loop_thread() -> tuple:
    """The receivers ``send_from_loop_thread`` leaves out: the two above, and ``close_caches`` when
    every configured cache's ``close`` is ``BaseCache.close``, which does nothing (the default
    local-memory cache's): ``close_caches`` walks the caches in use through asgiref's locals only
    to call it (~1 % of a post's calls, D76). Read once, on the first request: settings are loaded."""
    backends = [import_string(cache["BACKEND"]) for cache in settings.CACHES.values()]
    if all(backend.close is BaseCache.close for backend in backends):
        return (*NOTHING_TO_DO_ON_THE_LOOP_THREAD, close_caches)
    return NOTHING_TO_DO_ON_THE_LOOP_THREAD


def send_from_loop_thread(signal: Signal, sender, **named) -> None:
    """``signal.send(sender, **named)`` from the event loop's thread, without the receivers that
    do nothing there."""
    if not signal.receivers:
        return
    sync_receivers, async_receivers = signal._live_receivers(sender)
    if async_receivers or ASYNC_UNSAFE_ALLOWED:
        signal.send(sender, **named)  # Django's own handling; database work may run on this thread
        return
    left_out = left_out_on_the_loop_thread()
    for receiver in sync_receivers:
        if receiver not in left_out:
            receiver(signal=signal, sender=sender, **named)


def close_response(response: HttpResponseBase) -> None:
    """``response.close()`` (Django 5.2's ``HttpResponseBase.close``) with ``request_finished`` sent
    by ``send_from_loop_thread``; a response class with a close of its own keeps it."""
    if type(response).close is not HttpResponseBase.close:
        response.close()
        return
    for closer in response._resource_closers:
        with contextlib.suppress(Exception):
            closer()
    response._resource_closers.clear()  # free resources that were still referenced
    response.closed = True
    send_from_loop_thread(signals.request_finished, response._handler_class)


def is_api_scope(scope: dict) -> bool:
    return scope["type"] == "http" and scope["path"].startswith("/api/")


class GroupXASGIHandler(ASGIHandler):
    async def __call__(self, scope, receive, send):
        if is_api_scope(scope):
            await self.handle_api(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

    async def get_response_async(self, request):
        """``BaseHandler.get_response_async`` (Django 5.2) with ``log_response`` called on this
        thread when the ``django.request`` logger would drop what it logs; every other line is Django's."""
        set_urlconf(settings.ROOT_URLCONF)
        response = await self._middleware_chain(request)
        response._resource_closers.append(request.close)
        if response.status_code >= 400:
            args, kwargs = ("%s: %s", response.reason_phrase, request.path), {"response": response, "request": request}
            if request_logger.isEnabledFor(logging.ERROR if response.status_code >= 500 else logging.WARNING):
                await sync_to_async(log_response, thread_sensitive=False)(*args, **kwargs)  # it writes: Django's hop
            else:
                log_response(*args, **kwargs)  # returns at the logger's level check, and marks the response logged
        return response

    async def handle_api(self, scope, receive, send):
        """``ASGIHandler.handle`` (Django 5.2) with the signals sent and the response closed on
        this thread, not through ``sync_to_async``, and its tasks' names dropped before it returns
        (D76); every other line is Django's."""
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))
        send_from_loop_thread(signals.request_started, self.__class__, scope=scope)
        request, error_response = self.create_request(scope, body_file)
        if request is None:
            body_file.close()
            await self.send_response(error_response, send)
            close_response(error_response)
            return

        async def process_request(request, send):
            response = await self.run_get_response(request)
            with contextlib.suppress(asyncio.CancelledError):  # the client went away during the send
                await self.send_response(response, send)
            return response

        # Django's: a disconnect while the response is made cancels it (listen_for_disconnect first,
        # as it raises nothing unexpected that would keep process_request from being cancelled).
        tasks = [
            asyncio.create_task(self.listen_for_disconnect(receive)),
            asyncio.create_task(process_request(request, send)),
        ]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if task.done():
                try:
                    task.result()
                except RequestAborted:
                    pass
                except AssertionError:
                    body_file.close()
                    raise
            else:
                task.cancel()  # a view may handle its cancellation
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        try:
            response = tasks[1].result()
        except asyncio.CancelledError:
            send_from_loop_thread(signals.request_finished, self.__class__)
        else:
            close_response(response)
        body_file.close()
        # Not Django's (D76): daphne sends http.disconnect once the response is complete, so the
        # listener's task ends in RequestAborted, whose traceback holds this frame, whose ``tasks``
        # hold that task: a reference cycle that left the request, the response and both tasks
        # (~100 objects a request) for the garbage collector. Without the names, refcounting frees them.
        del tasks, task


def get_application() -> GroupXASGIHandler:
    import django

    django.setup(set_prefix=False)
    return GroupXASGIHandler()

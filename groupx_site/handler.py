"""Django's ASGI handler, without a thread per API request (docs/DECISIONS.md D20).

Django runs each request inside an asgiref ``ThreadSensitiveContext``: the request's sync code
(its ``request_started`` receivers, a sync view, ``response.close()`` with ``request_finished``)
gets a thread created for that request and joined at its end. Every ``/api/`` view is ``async``
and does its database work on ``groupx_site.core.db``'s long-lived threads, so what Django still runs
synchronously for it is a few microseconds of signal receivers. Those go to asgiref's one shared
thread instead: no thread is created per request. Pages and the admin keep Django's behaviour.
"""

from __future__ import annotations

from django.core.handlers.asgi import ASGIHandler


def is_api_scope(scope: dict) -> bool:
    return scope["type"] == "http" and scope["path"].startswith("/api/")


class GroupXASGIHandler(ASGIHandler):
    async def __call__(self, scope, receive, send):
        if is_api_scope(scope):
            await self.handle(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def get_application() -> GroupXASGIHandler:
    import django

    django.setup(set_prefix=False)
    return GroupXASGIHandler()

"""The protocol's error response, which the API's handlers and the middleware answer with, and the
one rule for what a hostile page can send (REST and the event stream in ``groupx_site/middleware.py``,
``/mcp`` in ``agents/mcp/server.py``; docs/DECISIONS.md D6, D37). Bodies are read by ninja through
the bounded parser (``groupx_site/api.py``, docs/DECISIONS.md D34)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from django.conf import settings
from django.http import HttpResponse
from django.http.request import split_domain_port, validate_host

from groupx_site.core.errors import GroupXError
from groupx_site.core.json_response import json_response


def error_response(error: GroupXError, **headers: str) -> HttpResponse:
    response = json_response(error.as_body(), error.status)
    for name, value in {**error.headers, **headers}.items():
        response[name] = value
    return response


WRITE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
LOOPBACK_HOSTNAMES = {"127.0.0.1", "localhost", "[::1]"}


def is_own_host(host: str) -> bool:
    """The Host header names this server (Django's ``ALLOWED_HOSTS``: loopback only), so the page
    that sent it did not reach 127.0.0.1 through a name of its own (DNS rebinding)."""
    domain, _port = split_domain_port(host)
    return bool(domain) and validate_host(domain, settings.ALLOWED_HOSTS)


def is_own_origin(origin: str, host: str) -> bool:
    hostname = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return hostname in LOOPBACK_HOSTNAMES and origin in {f"http://{host}", f"https://{host}"}


def foreign_host(*, status: int) -> GroupXError:
    return GroupXError(
        "INVALID_ENVELOPE", "the Host header must name this server (127.0.0.1, localhost or [::1])", status=status
    )


def refused_content_type(content_type: str) -> GroupXError | None:
    """A write that is not JSON: a hostile page may POST text/plain cross-site with no preflight."""
    if content_type.split(";")[0].strip().lower() != "application/json":
        return GroupXError("INVALID_ENVELOPE", "writes must be sent as application/json", status=415)
    return None


def refused_origin(origin: str | None, host: str) -> GroupXError | None:
    """A request from another origin's page. A request without ``Origin`` (curl, the CLIs, a
    same-origin GET of our own page) is not one."""
    if origin is not None and not is_own_origin(origin, host):
        return GroupXError("INVALID_ENVELOPE", "requests from another origin are refused", status=403)
    return None


def replayed(body: bytes, receive: Callable[[], Awaitable[dict[str, Any]]]) -> Callable[[], Awaitable[dict[str, Any]]]:
    """An ASGI ``receive`` that hands on the body already read, then the connection's own messages
    (its disconnect)."""
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay

"""HTTP guards that hold for every API route.

- Writes must be JSON, and no request may come from a foreign page or through a foreign ``Host``:
  a hostile site in the user's browser can send a ``text/plain`` form POST to 127.0.0.1 without a
  CORS preflight, open an event stream to it, or rebind a name of its own to 127.0.0.1
  (docs/DECISIONS.md D6, D25, D37; the rule is in ``groupx_site/core/http.py``). A request
  without ``Origin`` (curl, the CLIs, tests) is accepted.
- The body ceiling (2 MiB) is enforced from ``Content-Length`` before the body is read.
- Every response carries a self-only CSP, ``nosniff`` and ``no-referrer`` (FEATURES §5), except that
  the admin's pages say ``same-origin``: with ``no-referrer`` Chromium posts the admin's login form
  with ``Origin: null``, which Django's CSRF check refuses (docs/DECISIONS.md D111).
- Django's own 404/405 pages under ``/api/`` are reshaped into the protocol's error body.
- While the runtime drains for a stop, new requests get 503 and open SSE streams end; the REST
  writes admitted before it are counted, and the stop waits for them (``process_state.write_in_flight``).
- Every request speaks the reader's language (``LanguageMiddleware``): the page's switch (Django's
  language cookie), else the browser's ``Accept-Language``, else English; the pages say which
  (``Content-Language``) and vary on what chose it (docs/DECISIONS.md D123).
- Django's page middleware (sessions, auth, messages, CSRF, …) serves the admin and the HTML pages
  and is skipped under ``/api/``, which uses none of it (``pages_only``).
"""

from __future__ import annotations

from asgiref.sync import iscoroutinefunction, sync_to_async
from django.contrib.auth.middleware import AuthenticationMiddleware as DjangoAuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware as DjangoMessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware as DjangoSessionMiddleware
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse
from django.middleware.clickjacking import XFrameOptionsMiddleware as DjangoXFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware as DjangoCommonMiddleware
from django.middleware.csrf import CsrfViewMiddleware as DjangoCsrfViewMiddleware
from django.utils import translation
from django.utils.cache import patch_vary_headers
from django.utils.decorators import sync_and_async_middleware
from django.utils.translation import gettext

from groupx_site.core import process_state
from groupx_site.core.bodies import MAX_BODY_BYTES
from groupx_site.core.errors import GroupXError
from groupx_site.core.http import (
    WRITE_METHODS,
    error_response,
    foreign_host,
    refused_content_type,
    refused_origin,
)
from groupx_site.shutdown import end_on_drain
from groupx_site.store import store_faults


def check_api_write(request: HttpRequest, host: str) -> GroupXError | None:
    """``host``: the request's ``get_host()``, already checked against ``ALLOWED_HOSTS``."""
    refusal = refused_content_type(request.META.get("CONTENT_TYPE", "")) or refused_origin(
        request.META.get("HTTP_ORIGIN"), host
    )
    if refusal is not None:
        return refusal
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return GroupXError("INVALID_ENVELOPE", "invalid Content-Length")
    if length > MAX_BODY_BYTES:
        return GroupXError("MESSAGE_TOO_LARGE", "request body exceeds 2 MiB")
    return None


def is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith("/api/")


# While draining (PROTOCOL §10.8) health must keep answering with the runtime identity, and a
# repeated shutdown request stays harmless; everything else is refused.
DRAIN_EXEMPT_PATHS = {"/api/health", "/api/runtime/shutdown", "/api/runtime/restart"}


def _write_guard(request: HttpRequest) -> HttpResponse | None:
    host = None
    if is_api(request):
        # Django's CommonMiddleware, skipped under /api/ (pages_only), was what checked the Host
        # header against ALLOWED_HOSTS (loopback only) on every request; its DisallowedHost became
        # Django's HTML 400 page, so the API answers it with the protocol's body itself.
        try:
            host = request.get_host()  # once: a write's origin check below reuses it (D66)
        except DisallowedHost:
            return error_response(foreign_host(status=400))
        if request.method not in WRITE_METHODS:  # writes check their Content-Type first, below
            # A foreign page's EventSource or fetch: unreadable to it without CORS, but a stream
            # opened is a server task held for as long as that page likes.
            refusal = refused_origin(request.META.get("HTTP_ORIGIN"), host)
            if refusal is not None:
                return error_response(refusal)
    if process_state.readiness() == "closing" and request.path not in DRAIN_EXEMPT_PATHS:
        return error_response(GroupXError("STORE_UNAVAILABLE", gettext("GroupX is shutting down")))
    if host is not None and request.method in WRITE_METHODS:
        error = check_api_write(request, host)
        if error is None and request.path not in DRAIN_EXEMPT_PATHS:  # shutdown works in any state
            error = check_readiness()
        if error is not None:
            return error_response(error)
    return None


def _end_streams_on_drain(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """SSE bodies end when the runtime starts draining (their own loop never would)."""
    if getattr(response, "is_async", False) and response.get("Content-Type", "").startswith("text/event-stream"):
        response.streaming_content = end_on_drain(response.streaming_content)
    return response


STARTING_RETRY_AFTER_SECONDS = 1  # the start-up order takes about a second with CLIs that start at once


def check_readiness() -> GroupXError | None:
    """Writes wait for the start-up order (FEATURES §5, §7: recovery, the agents' sessions) and
    stop while the runtime drains (docs/DECISIONS.md D42)."""
    state = process_state.readiness()
    if state == "ready":
        return None
    if state == "closing":
        return GroupXError("STORE_UNAVAILABLE", gettext("GroupX is shutting down"))
    fault = store_faults.current()
    if fault is not None:  # the start waits for the store: say which fault, not just "starting"
        return store_faults.StoreUnavailable(fault.kind)
    if state == "failed":
        if (superseded := process_state.superseded()) is not None:  # it started, and another took over (D90)
            return GroupXError("SESSION_NOT_AVAILABLE", f"GroupX {superseded['message']}")
        return GroupXError("SESSION_NOT_AVAILABLE", gettext("GroupX failed to start; /api/health says why"))
    error = GroupXError(
        "SESSION_NOT_AVAILABLE",
        gettext(
            "GroupX is starting (recovering the room and starting the "
            "agents' sessions); nothing was written, try again shortly"
        ),
    )
    error.headers = {"Retry-After": str(STARTING_RETRY_AFTER_SECONDS)}
    return error


def _reshape_error(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    if not request.path.startswith("/api/") or response.get("Content-Type", "").startswith("application/json"):
        return response
    if response.status_code == 404:
        return error_response(GroupXError("UNKNOWN_TARGET", f"no API route {request.path}", status=404))
    if response.status_code == 405:
        return error_response(
            GroupXError("INVALID_ENVELOPE", f"{request.method} is not allowed here", status=405),
            Allow=response.get("Allow", ""),
        )
    return response


def _security_headers(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    response.setdefault("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
    response.setdefault("X-Content-Type-Options", "nosniff")
    response.setdefault("Referrer-Policy", "same-origin" if is_admin(request) else "no-referrer")
    return response


def _activate_language(request: HttpRequest) -> None:
    """What Django's ``LocaleMiddleware`` does without its URL-prefix machinery, and cheap enough for
    the API too (its sentences, e.g. why a write waits, are the reader's language)."""
    language = translation.get_language_from_request(request)
    translation.activate(language)
    request.LANGUAGE_CODE = translation.get_language()


def _language_headers(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    if not is_api(request):
        patch_vary_headers(response, ("Accept-Language", "Cookie"))
        response.setdefault("Content-Language", translation.get_language())
    return response


def is_admin(request: HttpRequest) -> bool:
    return request.path_info.startswith("/admin/")


def _hybrid(before=None, after=None):
    """A middleware that runs natively in both sync and async stacks, so the async SSE view is
    never pushed through a thread by a sync-only middleware."""

    @sync_and_async_middleware
    def middleware(get_response):
        if iscoroutinefunction(get_response):

            async def async_call(request):
                early = before(request) if before else None
                response = early if early is not None else await get_response(request)
                return after(request, response) if after else response

            return async_call

        def sync_call(request):
            early = before(request) if before else None
            response = early if early is not None else get_response(request)
            return after(request, response) if after else response

        return sync_call

    return middleware


def pages_only(middleware_class):
    """``middleware_class`` (a Django ``MiddlewareMixin``) for the pages and the admin only.

    In the async stack every ``MiddlewareMixin`` runs its ``process_*`` methods through
    ``sync_to_async``: a thread hand-off there and back for each, five middlewares, every request.
    The JSON API has no sessions, users, messages or forms (its writes are guarded above), so
    under ``/api/`` the request goes straight on (docs/DECISIONS.md D20). The subclass keeps
    Django's own checks (the admin's ``admin.E408``–``E410``) satisfied.
    """

    class PagesOnly(middleware_class):
        async def __acall__(self, request):
            if is_api(request):
                return await self.get_response(request)
            return await super().__acall__(request)

    if hasattr(middleware_class, "process_view"):

        async def process_view(self, request, view, args, kwargs):
            if is_api(request):
                return None
            return await sync_to_async(middleware_class.process_view, thread_sensitive=True)(
                self, request, view, args, kwargs
            )

        PagesOnly.process_view = process_view
    PagesOnly.__name__ = PagesOnly.__qualname__ = middleware_class.__name__
    return PagesOnly


CommonMiddleware = pages_only(DjangoCommonMiddleware)
SessionMiddleware = pages_only(DjangoSessionMiddleware)
CsrfViewMiddleware = pages_only(DjangoCsrfViewMiddleware)
AuthenticationMiddleware = pages_only(DjangoAuthenticationMiddleware)
MessageMiddleware = pages_only(DjangoMessageMiddleware)
XFrameOptionsMiddleware = pages_only(DjangoXFrameOptionsMiddleware)


def _counts_as_write(request: HttpRequest) -> bool:
    return request.method in WRITE_METHODS and is_api(request) and request.path not in DRAIN_EXEMPT_PATHS


@sync_and_async_middleware
def ApiWriteGuardMiddleware(get_response):  # noqa: N802 - named like the middleware classes around it
    """``_write_guard`` before the view; an admitted write counted until it answers, so a stop
    waits for it (PROTOCOL §10.8); SSE bodies made to end on the drain after it."""
    if iscoroutinefunction(get_response):

        async def async_call(request):
            early = _write_guard(request)
            if early is not None:
                return early
            if not _counts_as_write(request):
                return _end_streams_on_drain(request, await get_response(request))
            with process_state.write_in_flight():  # no await since the guard: admitted and counted at once
                return await get_response(request)

        return async_call

    def sync_call(request):
        early = _write_guard(request)
        return early if early is not None else _end_streams_on_drain(request, get_response(request))

    return sync_call


ApiErrorShapeMiddleware = _hybrid(after=_reshape_error)
SecurityHeadersMiddleware = _hybrid(after=_security_headers)
LanguageMiddleware = _hybrid(before=_activate_language, after=_language_headers)

"""The ninja API under ``/api/`` (OpenAPI at ``/api/docs``) and its error shape."""

from __future__ import annotations

import logging
from typing import Any, Literal

from django.http import HttpRequest, JsonResponse
from ninja import NinjaAPI
from ninja.errors import HttpError, ValidationError
from ninja.parser import Parser

from agents.api import router as agents_router
from assistant.api import router as assistant_router
from groupx_site.bootstrap import router as bootstrap_router
from groupx_site.core.bodies import parse_json_body
from groupx_site.core.contract import route
from groupx_site.core.errors import GroupXError
from groupx_site.core.http import error_response
from groupx_site.health_report import health_report
from groupx_site.shutdown import router as shutdown_router
from groupx_site.store import db, store_faults
from memory.api import router as memory_router
from rooms.api import router as rooms_router
from rooms.schemas import Response
from setup_wizard.api import router as setup_router
from turns.api import messages_router
from turns.api import router as turns_router

logger = logging.getLogger("groupx.api")


class BoundedJsonParser(Parser):
    """Every declared body is read by the one bounded parser (size, depth, text:
    ``groupx_site/core/bodies.py``), so its refusals keep their codes (D34)."""

    def parse_body(self, request: HttpRequest):
        return parse_json_body(request.body)


api = NinjaAPI(title="GroupX", version="0.1.0", urls_namespace="api", docs_url="/docs", parser=BoundedJsonParser())
api.add_router("/", messages_router)  # /api/messages: first, as when it was the room router's
api.add_router("/", rooms_router)
api.add_router("/", bootstrap_router)  # /api/bootstrap: the snapshot of every layer
api.add_router("/", turns_router)
api.add_router("/", setup_router)  # /api/setup
api.add_router("/", shutdown_router)  # /api/runtime/shutdown
api.add_router("/", memory_router)  # /api/memory, /api/identity, /api/context
api.add_router("/", agents_router)  # /api/agents/{actorId}/restart
api.add_router("/", assistant_router)  # /api/assistant: the side chat


@api.exception_handler(GroupXError)
def on_groupx_error(request: HttpRequest, error: GroupXError):
    return error_response(error)


@api.exception_handler(ValidationError)
def on_validation_error(request: HttpRequest, error: ValidationError):
    if not request.body and any(e.get("type") == "missing" and e.get("loc", ())[:1] == ("body",) for e in error.errors):
        # ninja does not parse an empty body: say so as the bounded parser would.
        return error_response(GroupXError("INVALID_ENVELOPE", "the request body is empty"))
    issues = [{"path": ".".join(map(str, e.get("loc", ()))), "code": e.get("type", "invalid")} for e in error.errors]
    return error_response(GroupXError("INVALID_ENVELOPE", "invalid request", details={"issues": issues[:20]}))


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, error: HttpError):
    if isinstance(error.__cause__, GroupXError):  # ninja wraps what its parser raised: the code is ours
        return error_response(error.__cause__)
    return error_response(GroupXError("INVALID_ENVELOPE", str(error), status=error.status_code))


@api.exception_handler(Exception)
def on_unexpected(request: HttpRequest, error: Exception):
    # Database calls through groupx_site.store.db already raise StoreUnavailable; this catches the rest.
    fault = store_faults.as_store_unavailable(error)
    if fault is not None:
        logger.warning("%s %s: %s", request.method, request.path, fault.message)
        return error_response(fault)
    logger.exception("unhandled error on %s %s", request.method, request.path)
    return error_response(GroupXError("INTERNAL_ERROR", "internal error"))


class HealthReport(Response):
    """While a stop drains, the answer is 503 with ``status: closing`` and the identity only."""

    status: Literal["ok", "degraded", "closing"]
    readiness: Literal["starting", "ready", "closing", "failed"]
    service: str
    protocol: str
    version: str  # GroupX's release (CHANGELOG.md)
    runtimeKey: str
    runtimeScopeKey: str
    store: dict[str, Any] | None = None
    agents: list[dict[str, Any]] | None = None
    # Who runs the room (D45, D58): mode, owner {workerId, mode, host, pid, since, heartbeatAt,
    # expiresAt, agents, roomJobs} or null with a message, the live standbys, and ``workers``: every
    # live worker with the agents it runs (``agents``) and whether it runs the room-wide jobs
    # (``roomJobs``). Each entry of ``agents`` names its ``worker``.
    worker: dict[str, Any] | None = None
    # Another instance took the room over (D90): {by: its lease row or null, message}; readiness failed.
    superseded: dict[str, Any] | None = None
    # The speed seam's mechanisms (groupx_site/speedups/switches.py) as this process runs them: {name: on}.
    speedups: dict[str, bool] | None = None


@api.get(
    "/health",
    tags=["runtime"],
    summary="Runtime identity, readiness and agent health",
    **route({200: HealthReport, 503: HealthReport}, errors={400: ("INVALID_ENVELOPE",)}),
)
async def get_health(request: HttpRequest, integrity: Literal["check"] | None = None):
    """``?integrity=check`` runs SQLite's quick check now instead of reporting the last one (D42)."""
    status, body = await db.read(health_report)(check_integrity=integrity == "check")
    response = JsonResponse(body, status=status)
    if status == 503:  # "closing" is the protocol's answer while a stop drains, not a server error
        response._has_been_logged = True  # Django's marker: skip the django.request error log
    return response

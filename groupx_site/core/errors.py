"""The protocol's error vocabulary: one table of codes, each with its HTTP status (FEATURES §19).

Actions raise ``GroupXError``; the API turns it into ``{"error": {code, message, details?}}``.
No stack trace ever reaches a client. Drivers raise ``agents.drivers.base.DriverError`` with the
same codes, so this module imports nothing but the standard library (no Django): the drivers,
which must stay Django-free, read their codes from here too.

A code that is not in ``ErrorCode`` is refused when an error is built (``ValueError``): a typo
would otherwise reach a client as a code no document explains.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    """Every error code GroupX may answer with or fail a Turn with, and its HTTP status.

    The status is what a REST answer carries when the code is raised as a ``GroupXError``. Codes
    that only ever end a Turn or a session (the implementation-level ones) carry 500: that is what
    such a code would mean over HTTP, and what GroupX answered for them before this table existed.
    """

    status: int

    def __new__(cls, code: str, status: int) -> ErrorCode:
        member = str.__new__(cls, code)
        member._value_ = code
        member.status = status
        return member

    # -- the protocol set ------------------------------------------------------------------------
    INVALID_ENVELOPE = "INVALID_ENVELOPE", 400
    UNKNOWN_ACTOR = "UNKNOWN_ACTOR", 404
    UNKNOWN_TARGET = "UNKNOWN_TARGET", 404
    SENDER_FIELD_FORBIDDEN = "SENDER_FIELD_FORBIDDEN", 400
    CLIENT_COMMAND_CONFLICT = "CLIENT_COMMAND_CONFLICT", 409
    DUPLICATE_DISPATCH = "DUPLICATE_DISPATCH", 409
    CAUSAL_CYCLE = "CAUSAL_CYCLE", 409
    ROOT_TURN_LIMIT_REACHED = "ROOT_TURN_LIMIT_REACHED", 429
    HOP_LIMIT_REACHED = "HOP_LIMIT_REACHED", 429
    QUEUE_CAPACITY_REACHED = "QUEUE_CAPACITY_REACHED", 429
    MESSAGE_TOO_LARGE = "MESSAGE_TOO_LARGE", 413
    ASK_TIMEOUT = "ASK_TIMEOUT", 500  # reserved: ask returns pending instead, so nothing raises it
    STEER_LIMIT_REACHED = "STEER_LIMIT_REACHED", 400
    SUPERVISION_WATCH_REQUIRED = "SUPERVISION_WATCH_REQUIRED", 400
    SUPERVISION_STEER_REQUIRED = "SUPERVISION_STEER_REQUIRED", 400
    SUPERVISION_PAIR_INVALID = "SUPERVISION_PAIR_INVALID", 400
    TRANSPORT_MODE_MISMATCH = "TRANSPORT_MODE_MISMATCH", 409
    UNEXPECTED_NATIVE_INTERACTION = "UNEXPECTED_NATIVE_INTERACTION", 500
    NATIVE_POLICY_BLOCKED = "NATIVE_POLICY_BLOCKED", 503
    MCP_BINDING_MISMATCH = "MCP_BINDING_MISMATCH", 400  # the /mcp answer is HTTP 400 (agents/mcp/server.py)
    MCP_UNAVAILABLE = "MCP_UNAVAILABLE", 503

    # -- implementation-level codes --------------------------------------------------------------
    ADAPTER_NOT_FOUND = "ADAPTER_NOT_FOUND", 500
    ADAPTER_START_FAILED = "ADAPTER_START_FAILED", 500
    PROTOCOL_HANDSHAKE_TIMEOUT = "PROTOCOL_HANDSHAKE_TIMEOUT", 500
    PROTOCOL_INVALID_MESSAGE = "PROTOCOL_INVALID_MESSAGE", 500
    SESSION_NOT_AVAILABLE = "SESSION_NOT_AVAILABLE", 503
    NATIVE_RESUME_UNSUPPORTED = "NATIVE_RESUME_UNSUPPORTED", 500
    TURN_FIRST_EVENT_TIMEOUT = "TURN_FIRST_EVENT_TIMEOUT", 500
    TURN_IDLE_TIMEOUT = "TURN_IDLE_TIMEOUT", 500
    TURN_CANCEL_TIMEOUT = "TURN_CANCEL_TIMEOUT", 500
    TURN_INTERRUPTED = "TURN_INTERRUPTED", 500
    STORE_UNAVAILABLE = "STORE_UNAVAILABLE", 503
    STORE_CONFLICT = "STORE_CONFLICT", 409
    CONTEXT_BUDGET_EXCEEDED = "CONTEXT_BUDGET_EXCEEDED", 500
    INTERNAL_ERROR = "INTERNAL_ERROR", 500  # HTTP only


def declared(code: str) -> ErrorCode:
    """``code`` as its table entry; ValueError when the table does not declare it."""
    try:
        return ErrorCode(code)  # type: ignore[call-arg]  # a lookup by value: __new__ only builds the members
    except ValueError:
        raise ValueError(f"{code!r} is not a GroupX error code (groupx_site/core/errors.py ErrorCode)") from None


class GroupXError(Exception):
    def __init__(self, code: str, message: str, *, status: int | None = None, details: dict[str, Any] | None = None):
        super().__init__(message)
        entry = declared(code)
        self.code = entry.value  # a plain str: it is compared, stored and sent as JSON as before
        self.message = message[:256]
        # ``status`` overrides the table where the same code means a different HTTP answer at the
        # edge (415/403/405 for a refused write, 404 for an unknown route: groupx_site/middleware.py).
        self.status = status or entry.status
        self.details = details
        self.headers: dict[str, str] = {}  # extra response headers (Retry-After for store faults)

    def as_body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = self.details
        return {"error": error}


def invalid(message: str, **details: Any) -> GroupXError:
    return GroupXError(ErrorCode.INVALID_ENVELOPE, message, details=details or None)

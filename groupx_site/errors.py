"""The protocol's error vocabulary and its HTTP mapping (ARCHITECTURE "Decisions" 7).

Actions raise ``GroupXError``; the API turns it into ``{"error": {code, message, details?}}``.
No stack trace ever reaches a client.
"""

from __future__ import annotations

from typing import Any

HTTP_STATUS = {
    "INVALID_ENVELOPE": 400,
    "SENDER_FIELD_FORBIDDEN": 400,
    "SUPERVISION_PAIR_INVALID": 400,
    "SUPERVISION_WATCH_REQUIRED": 400,
    "SUPERVISION_STEER_REQUIRED": 400,
    "STEER_LIMIT_REACHED": 400,
    "UNKNOWN_ACTOR": 404,
    "UNKNOWN_TARGET": 404,
    "CLIENT_COMMAND_CONFLICT": 409,
    "TRANSPORT_MODE_MISMATCH": 409,
    "STORE_CONFLICT": 409,
    "DUPLICATE_DISPATCH": 409,
    "CAUSAL_CYCLE": 409,
    "ROOT_TURN_LIMIT_REACHED": 429,
    "HOP_LIMIT_REACHED": 429,
    "QUEUE_CAPACITY_REACHED": 429,
    "MESSAGE_TOO_LARGE": 413,
    "STORE_UNAVAILABLE": 503,
    "SESSION_NOT_AVAILABLE": 503,
    "NATIVE_POLICY_BLOCKED": 503,
    "MCP_UNAVAILABLE": 503,
    "INTERNAL_ERROR": 500,
}


class GroupXError(Exception):
    def __init__(self, code: str, message: str, *, status: int | None = None, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.message = message[:256]
        self.status = status or HTTP_STATUS.get(code, 500)
        self.details = details
        self.headers: dict[str, str] = {}  # extra response headers (Retry-After for store faults)

    def as_body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = self.details
        return {"error": error}


def invalid(message: str, **details: Any) -> GroupXError:
    return GroupXError("INVALID_ENVELOPE", message, details=details or None)

"""The REST contract as schemas (docs/DECISIONS.md D34): the one error envelope, the base of every
checked request body or query, and the responses each route declares.

Each app declares its bodies in ``<app>/schemas.py`` as subclasses of ``Checked``. A ``Checked``
model is two things at once:

- the document: its fields (types, limits, patterns, enums) are what ``/api/openapi.json`` shows,
  so the contract can be read, generated against and fuzzed;
- the validation ninja runs: before pydantic looks at a field, the model runs its ``check``, the
  app's ``check_*`` function that MCP calls too. That function holds the protocol's order (sender
  fields first, then unknown keys, then each field) and raises ``GroupXError`` with the protocol's
  code; pydantic lets any exception that is not a ``ValueError`` through unchanged, so the API's
  ``GroupXError`` handler answers it exactly as before. The fields are then validated as declared:
  a body the check accepts but the document refuses (drift) is an ``INVALID_ENVELOPE`` with
  ``details.issues``, and the schema-driven fuzzer (tests/test_openapi_contract.py) proves the two
  agree in both directions.

The view reads ``body.checked``: what the check returned (the command the action takes), so the
body is checked once.

This module imports pydantic and the error table only: the apps' schemas stand on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, model_validator

from groupx_site.core.errors import ErrorCode

COMPONENTS = "#/components/schemas/"

# "Non-blank" as the checks mean it (``str.strip``): one character Python does not count as
# whitespace. Spelled out, because a pattern's ``\S`` differs between regex dialects (ECMA's
# leaves out U+001C–U+001F, which ``str.isspace`` counts).
NON_BLANK = "[^" + "".join(f"\\u{ord(c):04x}" for c in map(chr, range(0x3001)) if c.isspace()) + "]"


class ErrorDetail(BaseModel):
    code: ErrorCode = Field(description="One of the protocol's error codes (FEATURES §19).")
    message: str = Field(max_length=256, description="For people; never parsed.")
    details: dict[str, Any] | None = Field(
        None, description="Machine-readable specifics: forbiddenFields, unknownFields, issues, limit, length, …"
    )


class ErrorBody(BaseModel):
    """Every refusal under /api/: ``{"error": {code, message, details?}}``."""

    model_config = ConfigDict(title="ErrorBody")
    error: ErrorDetail


class Checked(BaseModel):
    """A request body (or query) whose rules are one ``check`` function, documented by its fields.

    ``check`` takes the raw JSON value and returns what the action needs; ``query_check`` marks a
    query model, whose check reads every parameter as sent (ninja passes only the declared ones on,
    and an undeclared parameter must still be refused with the protocol's code)."""

    model_config = ConfigDict(extra="forbid")
    check: ClassVar[Callable[[Any], Any]]
    query_check: ClassVar[bool] = False
    _checked: Any = PrivateAttr(None)

    @model_validator(mode="wrap")
    @classmethod
    def _protocol_rules_first(cls, raw: Any, handler: Callable[[Any], Checked], info: ValidationInfo) -> Checked:
        if isinstance(raw, cls):
            return raw
        source = raw
        if cls.query_check:
            request = (info.context or {}).get("request")
            source = request.GET.dict() if request is not None else raw
        checked = cls.check(source)
        model = handler(raw)
        model._checked = checked
        return model

    @property
    def checked(self) -> Any:
        return self._checked


# ---- the responses a route declares ---------------------------------------------------------------

# Every route: an unexpected fault (never a stack trace) and a store that cannot answer right now
# (Retry-After says when to try again; D24), or a runtime that is stopping.
ANY_ROUTE: dict[int, tuple[str, ...]] = {500: ("INTERNAL_ERROR",), 503: ("STORE_UNAVAILABLE",)}
# Every write, before its body is read (groupx_site/middleware.py): not JSON, a foreign page, over
# 2 MiB, or restart recovery still running.
ANY_WRITE: dict[int, tuple[str, ...]] = {
    400: ("INVALID_ENVELOPE",),
    403: ("INVALID_ENVELOPE",),
    413: ("MESSAGE_TOO_LARGE",),
    415: ("INVALID_ENVELOPE",),
    503: ("STORE_UNAVAILABLE", "SESSION_NOT_AVAILABLE"),
}
# A body whose rules are a ``Checked`` model: the sender's fields are refused first.
CHECKED_BODY: dict[int, tuple[str, ...]] = {400: ("SENDER_FIELD_FORBIDDEN", "INVALID_ENVELOPE")}

WHY = {
    400: "The request is malformed",
    403: "A write from a foreign page (Origin)",
    404: "Something the request names does not exist",
    405: "Method not allowed",
    409: "The request conflicts with what is stored",
    413: "The body or a text field is over its limit",
    415: "A write that is not application/json",
    429: "A capacity limit; retry later",
    500: "An unexpected fault",
    503: "The store or the runtime cannot answer right now (Retry-After)",
}


def merge(*tables: Mapping[int, Iterable[str]]) -> dict[int, tuple[str, ...]]:
    merged: dict[int, list[str]] = {}
    for table in tables:
        for status, codes in table.items():
            merged.setdefault(status, [])
            merged[status] += [code for code in codes if code not in merged[status]]
    return {status: tuple(codes) for status, codes in sorted(merged.items())}


def error_response_doc(status: int, codes: tuple[str, ...]) -> dict[str, Any]:
    """The error envelope at one status, its code narrowed to the ones this route can answer there."""
    for code in codes:
        ErrorCode(code)  # type: ignore[call-arg]  # a lookup by value; a typo is an import error, not a wrong document
    schema: dict[str, Any] = {
        "$ref": COMPONENTS + "ErrorBody",
        "properties": {"error": {"properties": {"code": {"enum": list(codes)}}}},
    }
    doc: dict[str, Any] = {
        "description": f"{WHY.get(status, 'Refused')}: {', '.join(codes)}",
        "content": {"application/json": {"schema": schema}},
    }
    if status == 503:
        doc["headers"] = {
            "Retry-After": {
                "description": "Seconds to wait before retrying (store faults)",
                "schema": {"type": "string"},
            }
        }
    return doc


def route(
    ok: dict[int, Any],
    *,
    errors: dict[int, Iterable[str]] | None = None,
    write: bool = False,
    body: bool = False,
    media_type: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The keyword arguments of a ninja route decorator that document every answer it gives.

    ``ok``: {status: response schema} for the successes; ``errors``: {status: codes} the route adds
    to those every route (and every write, and every checked body) can answer; ``media_type``: a
    success that is not JSON (an event stream, a Markdown file), documented with a string schema.
    """
    table = merge(ANY_ROUTE, ANY_WRITE if write else {}, CHECKED_BODY if body else {}, errors or {})
    table = {status: codes for status, codes in table.items() if status not in ok}  # health's 503 is a report
    response: dict[int, Any] = dict(ok)
    response.update({status: ErrorBody for status in table})
    responses_extra: dict[Any, Any] = {status: error_response_doc(status, codes) for status, codes in table.items()}
    if media_type is not None:
        for status in ok:
            responses_extra[status] = {"content": {media_type: {"schema": {"type": "string"}}}}
    openapi_extra = extra.pop("openapi_extra", {})
    openapi_extra.setdefault("responses", {}).update(responses_extra)
    # by_alias: an answer's field named by its alias (an envelope's "schema") is documented so.
    return {"response": response, "openapi_extra": openapi_extra, "by_alias": True, **extra}

"""Parsing a JSON request body with bounds (D25): size, nesting depth and text.

One parser for every JSON body GroupX accepts over HTTP (the REST API, /api/setup included). Each
refusal is the protocol's code, raised before any work is done:

- an empty body, malformed JSON or invalid UTF-8 → 400 ``INVALID_ENVELOPE``;
- more than ``MAX_BODY_BYTES`` → 413 ``MESSAGE_TOO_LARGE`` (normally refused earlier, from the
  declared length or while a chunked upload arrives: ``groupx_site/body_limit.py``);
- arrays and objects nested deeper than ``MAX_JSON_DEPTH`` → 400 ``INVALID_ENVELOPE``. No GroupX
  body needs more than four levels; Python's parser recurses once per level and gives up with a
  ``RecursionError`` (a 500 before this) somewhere near a thousand;
- a string, or an object key, that cannot be written as UTF-8 (a lone surrogate spelled
  ``"\\ud800"``) → 400 ``INVALID_ENVELOPE`` naming the field: stored, it would stop every stream
  that replays it (``groupx_site/core/text.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from groupx_site.core.errors import GroupXError
from groupx_site.core.text import find_unencodable

MAX_BODY_BYTES = 2 * 1024 * 1024  # FEATURES §5: "a body over 2 MiB → 413 MESSAGE_TOO_LARGE"
MAX_JSON_DEPTH = 32


def parse_json_body(raw: bytes) -> Any:
    if not raw:
        raise GroupXError("INVALID_ENVELOPE", "the request body is empty")
    if len(raw) > MAX_BODY_BYTES:
        raise GroupXError("MESSAGE_TOO_LARGE", "request body exceeds 2 MiB")
    try:
        value = json.loads(raw)
    except RecursionError:
        raise too_deep() from None
    except (ValueError, UnicodeDecodeError):
        raise GroupXError("INVALID_ENVELOPE", "the request body is not valid JSON") from None
    if not cannot_need_checks(raw):
        check_json_value(value)
    return value


SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def cannot_need_checks(raw: bytes) -> bool:
    """True when ``raw``'s JSON value can neither nest deeper than ``MAX_JSON_DEPTH`` nor hold a lone
    surrogate, read from the bytes in ~1 µs instead of walking the value (~15 µs of a message post,
    D66). Conservative: anything that might fail a check is walked, so the refusals are unchanged.

    - depth: a value cannot nest deeper than the brackets that open in its text (those inside
      strings counted too);
    - text: ``json.loads`` decodes bytes with ``surrogatepass`` in the encoding it detects, so a lone
      surrogate comes from a ``\\uD800``-``\\uDFFF`` escape, from UTF-8 bytes that spell one (strict
      UTF-8 refuses them), or from a UTF-16/32 body (which has NUL bytes in its first four).
    """
    if raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH or b"\x00" in raw[:4]:
        return False
    if SURROGATE_ESCAPE.search(raw) is not None:
        return False
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def check_json_value(value: Any) -> None:
    """Depth and text checks for a value already parsed (an MCP tool's arguments, too)."""
    if depth_exceeds(value, MAX_JSON_DEPTH):
        raise too_deep()
    path = find_unencodable(value)
    if path is not None:
        raise GroupXError(
            "INVALID_ENVELOPE",
            f"{path} holds text that is not valid Unicode (a lone surrogate)",
            details={"issues": [{"path": path, "code": "invalid_unicode"}]},
        )


def too_deep() -> GroupXError:
    return GroupXError("INVALID_ENVELOPE", f"the JSON body is nested deeper than {MAX_JSON_DEPTH} levels")


def depth_exceeds(value: Any, limit: int) -> bool:
    """True when arrays/objects nest more than ``limit`` levels; iterative, so any depth is safe."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False

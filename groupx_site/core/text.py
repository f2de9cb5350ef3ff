"""Text that can always be written as UTF-8 (D25).

JSON's ``\\uXXXX`` escapes can spell a lone UTF-16 surrogate (``"\\ud800"``): valid JSON, a legal
Python ``str``, and not encodable as UTF-8. One such character stored in the log made every later
SSE frame and every Context Packet that quoted it fail to encode. So every text is checked where it
enters: a REST or MCP body with one is refused (``find_unencodable``), a CLI's output is repaired
with U+FFFD (``repair``), and whatever already sits in an older log is repaired again on the way
out (``repair`` on the encoded frame), so one row never stops a stream.
"""

from __future__ import annotations

import json
from typing import Any


def is_encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def repair(text: str) -> tuple[str, int]:
    """``text`` with each lone surrogate replaced by U+FFFD, and how many were replaced.

    A well-formed surrogate *pair* (two escapes that spell one astral character, as JSON encoders
    that use ``ensure_ascii`` write them) is joined into that character instead of replaced.
    """
    if is_encodable(text):
        return text, 0
    # UTF-16 with surrogatepass keeps pairs and lone halves as code units; decoding with
    # "replace" then joins the pairs and turns each lone half into one U+FFFD.
    repaired = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return repaired, _count_lone(text)


def _count_lone(text: str) -> int:
    count, i, n = 0, 0, len(text)
    while i < n:
        c = ord(text[i])
        if 0xD800 <= c <= 0xDBFF and i + 1 < n and 0xDC00 <= ord(text[i + 1]) <= 0xDFFF:
            i += 2
            continue
        if 0xD800 <= c <= 0xDFFF:
            count += 1
        i += 1
    return count


def repair_tree(value: Any) -> tuple[Any, int]:
    """A JSON value (dicts, lists, strings, scalars) with every string repaired, keys included;
    returns the value (the same object when nothing needed repair) and the replacement count."""
    if isinstance(value, str):
        return repair(value)
    if isinstance(value, list):
        total, out = 0, []
        for item in value:
            fixed, count = repair_tree(item)
            total += count
            out.append(fixed)
        return (out, total) if total else (value, 0)
    if isinstance(value, dict):
        total, fixed_dict = 0, {}
        for key, item in value.items():
            fixed_key, key_count = repair(key) if isinstance(key, str) else (key, 0)
            fixed_item, item_count = repair_tree(item)
            total += key_count + item_count
            fixed_dict[fixed_key] = fixed_item
        return (fixed_dict, total) if total else (value, 0)
    return value, 0


def find_unencodable(value: Any, path: str = "") -> str | None:
    """The JSON path (``to[2]``, ``supervision.observers[0]``, or a key's path) of the first string
    that cannot be encoded as UTF-8, or None when every string can."""
    if isinstance(value, str):
        return None if is_encodable(value) else (path or "$")
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = find_unencodable(item, f"{path}[{index}]")
            if found is not None:
                return found
    elif isinstance(value, dict):
        for key, item in value.items():
            key_path = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and not is_encodable(key):
                return repair(key_path)[0]
            found = find_unencodable(item, key_path)
            if found is not None:
                return found
    return None


# What ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` builds on every call, built
# once: the same text, without constructing an encoder per frame (~2 µs each; docs/DECISIONS.md D64).
# An encoder holds no state between calls, so every thread may share it.
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


class StoredJSON(json.JSONEncoder):
    """The encoder of the log's JSON columns (``rooms.models``; ``rooms/sql.py`` writes the same text):
    ``json_text``'s compact UTF-8, where Django's default escaped every non-ASCII character."""

    def encode(self, o: Any) -> str:
        return json_text(o)


def json_text(value: Any) -> str:
    """``value`` as compact JSON text that always encodes as UTF-8: what the log, SSE frames and
    JSON responses send. A lone surrogate already stored (by an older version) comes out as
    U+FFFD instead of failing the whole frame, page or stream."""
    return repair(_COMPACT.encode(value))[0]

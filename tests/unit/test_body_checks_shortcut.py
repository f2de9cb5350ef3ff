"""``groupx_site/core/bodies.py``: a body whose bytes show it cannot fail the depth or text checks
skips walking its value (D66); every body that might fail them is walked, so the refusals stay."""

from __future__ import annotations

import json

import pytest

from groupx_site.core.bodies import MAX_JSON_DEPTH, cannot_need_checks, parse_json_body
from groupx_site.core.errors import GroupXError


def refusal(raw: bytes) -> str:
    with pytest.raises(GroupXError) as caught:
        parse_json_body(raw)
    return caught.value.message


def test_a_plain_message_body_is_not_walked():
    assert cannot_need_checks(
        json.dumps({"to": ["agent:kimi"], "content": "héllo 你好 😀"}, ensure_ascii=False).encode()
    )


def test_a_surrogate_escape_is_walked_and_refused_naming_its_field():
    raw = b'{"content": "\\ud800"}'
    assert not cannot_need_checks(raw)
    assert refusal(raw) == "content holds text that is not valid Unicode (a lone surrogate)"


def test_a_surrogate_spelled_in_utf8_bytes_is_walked_and_refused():
    raw = b'{"content": "\xed\xa0\x80"}'  # U+D800 as UTF-8 would spell it; json.loads lets it through
    assert not cannot_need_checks(raw)
    assert refusal(raw) == "content holds text that is not valid Unicode (a lone surrogate)"


def test_a_utf16_body_is_walked_and_refused_when_it_holds_a_lone_surrogate():
    raw = '{"content": "\ud800"}'.encode("utf-16-le", "surrogatepass")
    assert not cannot_need_checks(raw)
    assert refusal(raw) == "content holds text that is not valid Unicode (a lone surrogate)"


def test_nesting_deeper_than_the_limit_is_walked_and_refused():
    raw = b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1)
    assert not cannot_need_checks(raw)
    assert refusal(raw) == f"the JSON body is nested deeper than {MAX_JSON_DEPTH} levels"


def test_brackets_inside_strings_only_cost_the_walk():
    raw = json.dumps({"content": "[" * 100}).encode()
    assert not cannot_need_checks(raw)
    assert parse_json_body(raw) == {"content": "[" * 100}

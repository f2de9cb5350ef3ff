"""The text and body rules (D25), in-process: what counts as encodable, how a lone
surrogate is repaired and named, and how deep a body may nest."""

from __future__ import annotations

import json

import pytest

from groupx_site.core.bodies import MAX_JSON_DEPTH, depth_exceeds, parse_json_body
from groupx_site.core.errors import GroupXError
from groupx_site.core.text import find_unencodable, json_text, repair, repair_tree

LONE = json.loads('"\\ud800"')


def test_a_lone_surrogate_is_replaced_by_one_replacement_character_and_counted():
    assert repair(f"a{LONE}b{LONE}") == ("a\ufffdb\ufffd", 2)


def test_text_that_encodes_is_returned_unchanged():
    text = "plain, 汉字 and 😀"
    assert repair(text) == (text, 0)
    assert repair(text)[0] is text


def test_two_surrogate_halves_that_form_a_pair_are_joined_into_their_character():
    assert repair("\ud83d\ude00")[0] == "😀"


def test_repair_tree_repairs_keys_and_values_and_keeps_clean_trees_as_they_are():
    clean = {"a": ["b", 1, None]}
    assert repair_tree(clean)[0] is clean
    assert repair_tree({LONE: [f"x{LONE}", 2]}) == ({"\ufffd": ["x\ufffd", 2]}, 2)


def test_find_unencodable_names_the_path_of_the_first_bad_string():
    assert find_unencodable({"to": ["agent:a", LONE]}) == "to[1]"
    assert find_unencodable({"supervision": {"observers": [LONE]}}) == "supervision.observers[0]"
    assert find_unencodable({"fine": "yes"}) is None


def test_json_text_of_a_value_holding_a_lone_surrogate_encodes_as_utf8():
    text = json_text({"content": f"bad {LONE}"})
    assert text.encode("utf-8") == '{"content":"bad \ufffd"}'.encode()


def test_depth_is_counted_in_arrays_and_objects_without_recursion():
    deep = []
    for _ in range(100_000):
        deep = [deep]
    assert depth_exceeds(deep, MAX_JSON_DEPTH)
    assert not depth_exceeds({"a": [{"b": []}]}, 4)  # object, array, object, array
    assert depth_exceeds({"a": [{"b": []}]}, 3)


@pytest.mark.parametrize(
    "raw, code",
    [
        (b"", "INVALID_ENVELOPE"),
        (b"{not json", "INVALID_ENVELOPE"),
        (b"\xff\xfe", "INVALID_ENVELOPE"),
        (b"[" * 50_000 + b"]" * 50_000, "INVALID_ENVELOPE"),
        (b'{"content": "\\udfff"}', "INVALID_ENVELOPE"),
        (b'"' + b"x" * (2 * 1024 * 1024) + b'"', "MESSAGE_TOO_LARGE"),
    ],
)
def test_a_body_that_breaks_a_rule_is_refused_with_its_code(raw, code):
    with pytest.raises(GroupXError) as refused:
        parse_json_body(raw)
    assert refused.value.code == code


def test_a_body_within_every_bound_parses():
    assert parse_json_body(b'{"content": "\\ud83d\\ude00", "to": ["agent:a"]}') == {"content": "😀", "to": ["agent:a"]}

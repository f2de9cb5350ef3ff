"""What the trimmed paths of a Turn write and send is what they wrote and sent before
(docs/DECISIONS.md D64): the JSON text of frames and responses, the Event an append returns and
the frame it hands to the streams."""

from __future__ import annotations

import json

import pytest

from groupx_site.core.text import json_text, repair

LONE = json.loads('"\\ud800"')


@pytest.mark.parametrize("value", [
    {"content": "plain, 汉字, 😀 and \u2028", "n": 1, "f": 1e-07, "g": 1e16, "h": 0.1, "t": True, "z": None},
    {"nan": float("nan"), "inf": float("inf"), 3: "an int key", "tuple": (1, 2), "big": 2**80},
    [{"nested": [{"deep": ["\x00\x1f\"\\"]}]}],
    {"bad": f"a lone {LONE} half"},
    "a string", 12, None,
])
def test_json_text_writes_what_json_dumps_with_compact_separators_writes(value):
    assert json_text(value) == repair(json.dumps(value, ensure_ascii=False, separators=(",", ":")))[0]

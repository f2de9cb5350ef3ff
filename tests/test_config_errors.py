"""A groupx.json the parser cannot take is one clear line from the ``groupx`` command, never a
traceback (docs/DECISIONS.md D101)."""

from __future__ import annotations

import pytest

from tests.groupx_cli import groupx


@pytest.mark.parametrize(
    "text, says",
    [
        ('{"server": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ("\ufeff" + '{"server": {"port": 4310}}', "byte order mark (BOM)"),
        ('{"server": {"port": 4310,}}', "not valid JSON (line 1, column 26)"),
    ],
    ids=["100000-deep", "utf8-bom", "trailing-comma"],
)
def test_a_config_the_parser_cannot_take_is_one_line_that_says_why(tmp_path, text, says):
    config = tmp_path / "groupx.json"
    config.write_text(text, encoding="utf-8")

    started = groupx("start", "--config", str(config), "--no-open", workdir=tmp_path)

    assert started.returncode == 1
    assert started.stderr.count("\n") == 1 and "Traceback" not in started.stderr, started.stderr
    assert started.stderr.startswith(f"groupx: {config}: ") and says in started.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["groupx.json"]  # nothing else was opened

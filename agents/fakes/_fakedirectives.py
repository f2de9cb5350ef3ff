"""The ``[[fake: …]]`` turn-directive language shared by every fake CLI (NATIVE_PROTOCOLS §6.3).

``[[fake: reason n=2; mcp tool=publish args='{"content":"x"}'; stream n=3]]`` — directives are
separated by ``;``, each a name plus ``key=value`` words; values are bare, ``"double quoted"``
(backslash escapes) or ``'single quoted'`` (verbatim, so JSON fits). Only the text after the last
``[groupx_current_message]`` / ``[current_message]`` marker line is read (§1.7), because the
context packet before it quotes room history, old directives included. Re-exported by
``_fakecore``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

# A marker *line*; the context packet may quote old prompts, so only the last one counts (§1.7).
_MARKER_RE = re.compile(r"^[ \t]*\[(?:groupx_)?current_message\][ \t]*\r?$", re.MULTILINE)
_BLOCK_OPEN = "[[fake:"
_TRUTHY = {"1", "true", "yes", "on"}


class DirectiveError(ValueError):
    pass


@dataclass
class Directive:
    """One ``name k=v …`` item of a ``[[fake: …]]`` block. Values stay strings until read."""

    name: str
    params: dict[str, str] = field(default_factory=dict)

    def get_str(self, key: str, default: str | None = None) -> str | None:
        return self.params.get(key, default)

    def get_int(self, key: str, default: int) -> int:
        try:
            return int(self.params[key]) if key in self.params else default
        except ValueError as exc:
            raise DirectiveError(f"{self.name}: {key} must be an integer") from exc

    def get_float(self, key: str, default: float) -> float:
        try:
            return float(self.params[key]) if key in self.params else default
        except ValueError as exc:
            raise DirectiveError(f"{self.name}: {key} must be a number") from exc

    def get_bool(self, key: str, default: bool = False) -> bool:
        return self.params[key].lower() in _TRUTHY if key in self.params else default

    def get_json(self, key: str, default: Any = None) -> Any:
        if key not in self.params:
            return default
        try:
            return json.loads(self.params[key])
        except ValueError as exc:
            raise DirectiveError(f"{self.name}: {key} is not valid JSON") from exc


def current_message(text: str) -> str:
    """The text after the last marker line (§1.7, X1), or all of it when there is no marker."""
    matches = list(_MARKER_RE.finditer(text))
    return text[matches[-1].end() :].lstrip("\r\n") if matches else text


def _scan_block(text: str, start: int) -> int:
    """Index just past the ``]]`` closing the block whose body starts at ``start``."""
    quote = None
    i = start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif text.startswith("]]", i):
            return i + 2
        i += 1
    raise DirectiveError("unterminated [[fake: …]] block")


def find_blocks(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, body)`` of every ``[[fake: …]]`` block, in order."""
    blocks = []
    pos = 0
    while (start := text.find(_BLOCK_OPEN, pos)) >= 0:
        end = _scan_block(text, start + len(_BLOCK_OPEN))
        blocks.append((start, end, text[start + len(_BLOCK_OPEN) : end - 2]))
        pos = end
    return blocks


def _tokenize(body: str) -> list[list[str]]:
    """Split a block body into directives (on ``;``) of words (on whitespace), honouring
    ``"double"`` (backslash escapes) and ``'single'`` (verbatim, so JSON fits) quotes."""
    directives: list[list[str]] = []
    words: list[str] = []
    cur: list[str] = []
    in_word = False
    quote = None
    i = 0
    while i < len(body):
        ch = body[i]
        if quote:
            if quote == '"' and ch == "\\" and i + 1 < len(body):
                nxt = body[i + 1]
                cur.append({"n": "\n", "t": "\t", "r": "\r"}.get(nxt, nxt))
                i += 1
            elif ch == quote:
                quote = None
            else:
                cur.append(ch)
        elif ch in "\"'":
            quote, in_word = ch, True
        elif ch == ";" or ch.isspace():
            if in_word:
                words.append("".join(cur))
                cur, in_word = [], False
            if ch == ";" and words:
                directives.append(words)
                words = []
        else:
            cur.append(ch)
            in_word = True
        i += 1
    if quote:
        raise DirectiveError(f"unclosed {quote} quote in directive block")
    if in_word:
        words.append("".join(cur))
    if words:
        directives.append(words)
    return directives


def parse_directives(body: str) -> list[Directive]:
    """``"reason n=2; stream n=3 text='a b'"`` → directives. A bare word after the name is a
    flag (``hang ignore_cancel`` means ``ignore_cancel=1``)."""
    out = []
    for words in _tokenize(body):
        params: dict[str, str] = {}
        for word in words[1:]:
            key, eq, value = word.partition("=")
            params[key] = value if eq else "1"
        out.append(Directive(words[0], params))
    return out


def strip_blocks(text: str) -> str:
    try:
        blocks = find_blocks(text)
    except DirectiveError:
        return text.strip()
    for start, end, _body in reversed(blocks):
        text = text[:start] + text[end:]
    return text.strip()


def default_turn_directives(default_turn: Any) -> list[Directive]:
    """``scenario.default_turn``: a list of directive strings, or one ``a; b`` string."""
    if default_turn is None:
        default_turn = ["echo"]
    items = [default_turn] if isinstance(default_turn, str) else list(default_turn)
    out: list[Directive] = []
    for item in items:
        out.extend(parse_directives(str(item)))
    return out


def turn_plan(prompt_text: str, default_turn: Any) -> tuple[list[Directive], str]:
    """Directives for one prompt plus the current message without its blocks (for ``echo``).

    A malformed block becomes a single ``invalid`` directive so the fake can fail the turn
    visibly instead of silently running something else."""
    message = current_message(prompt_text)
    try:
        blocks = find_blocks(message)
        directives = [d for _s, _e, body in blocks for d in parse_directives(body)]
    except DirectiveError as exc:
        return [Directive("invalid", {"error": str(exc)})], message.strip()
    if not blocks:
        directives = default_turn_directives(default_turn)
    return directives, strip_blocks(message)


def split_text(text: str, n: int) -> list[str]:
    """``text`` cut into at most ``n`` non-empty consecutive pieces of similar length."""
    n = max(1, min(n, len(text))) if text else 1
    size, extra = divmod(len(text), n)
    pieces, pos = [], 0
    for i in range(n):
        step = size + (1 if i < extra else 0)
        pieces.append(text[pos : pos + step])
        pos += step
    return pieces

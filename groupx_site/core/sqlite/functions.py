"""SQL functions GroupX's SQLite connections carry (registered by ``base.DatabaseWrapper``).

``groupx_folded_contains(text, term)``: whether ``term`` occurs in ``text`` with case folded as the
FTS5 trigram tokenizer folds it (every letter, not only ASCII's, as LIKE does). Search applies it
to the few messages its index has not taken yet, so they match exactly as indexed ones would
(rooms/search_index.py, docs/DECISIONS.md D80). The tokenizer folds each character to its simple
lowercase; ``str.lower`` gives the same for every letter but the few whose lowercase is two
characters (such as U+0130), which match their own two-character lowercase here.
"""

from __future__ import annotations

FOLDED_CONTAINS = "groupx_folded_contains"


def folded_contains(text: object, term: object) -> bool:
    if not isinstance(text, str) or not isinstance(term, str):
        return False
    return term.lower() in text.lower()


def register(connection) -> None:
    """On a new sqlite3 connection."""
    connection.create_function(FOLDED_CONTAINS, 2, folded_contains, deterministic=True)

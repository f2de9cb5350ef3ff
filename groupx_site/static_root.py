"""Where the fingerprinted copies of GroupX's static files live (docs/DECISIONS.md D120).

One directory per content of ``static/`` (and Django's version, whose storage writes the hashes), in
the user's cache: a checkout, a worktree or an installed wheel never writes into its own tree, two
versions side by side never share a manifest, and a directory once built is never rewritten. No
Django import here: the settings read it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import django


def sources_fingerprint(source: Path) -> str:
    """Sixteen hex digits of every file's path and bytes under ``source`` (~1 MB: a few ms)."""
    digest = hashlib.sha256(django.__version__.encode())
    for path in sorted(source.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(source)).encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def build_root(source: Path) -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "groupx" / "static" / sources_fingerprint(source)

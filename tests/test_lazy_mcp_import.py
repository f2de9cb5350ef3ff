"""The MCP SDK is loaded by the first ``/mcp`` request, not when the server starts (docs/DECISIONS.md
D56): it is ~20 MiB of the server's resident memory, and most servers never receive an MCP call.
``tests/test_member_tools.py`` and ``tests/test_assistant_operator.py`` show the tools answering
through the lazily imported endpoints."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOADED_SDK = (
    "import sys, groupx_site.asgi; print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types'))[:3])"
)


def test_loading_the_asgi_application_does_not_import_the_mcp_sdk(tmp_path):
    env = {**os.environ, "GROUPX_DB": str(tmp_path / "groupx.sqlite3"), "PYTHONPATH": str(REPO)}
    loaded = subprocess.run(
        [sys.executable, "-c", LOADED_SDK], cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    assert loaded.stdout.strip() == "[]", loaded.stdout

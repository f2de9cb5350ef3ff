"""``make test-pg``'s runs, inside the cluster ``python -m tests.pg.cluster`` started (D53, D54):

1. the SQL parity test (tests/unit/test_sql_parity.py) in-process against PostgreSQL;
2. a representative end-to-end set of ``tests/`` (posting, @all dispatch with the fakes, SSE replay
   and follow, cancel, memory and message search, MCP ask), every server on a database of its own;
3. tests/pg: seq order across processes (two web processes posting at once), the move, and
   several workers each running some agents (``--agents``, one SIGKILLed mid-Turn; D58);
4. the split tier's two-mode tests on PostgreSQL (two workers, the owner SIGKILLed mid-Turn).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.pg.databases import cluster_url, url_of

END_TO_END = [
    "tests/test_post_message.py",
    "tests/test_agent_turns.py",
    "tests/test_event_stream.py",
    "tests/test_replay_events.py",
    "tests/test_memory.py",
    "tests/test_member_tools.py",
    "tests/test_history.py",
]
PYTEST = [sys.executable, "-m", "pytest", "-q"]


def main() -> int:
    cluster = cluster_url()
    if cluster is None:
        print("GROUPX_TEST_PG_URL is not set: run through python -m tests.pg.cluster (make test-pg)")
        return 2
    folder = Path(tempfile.mkdtemp(prefix="groupx-pg-unit-"))
    (folder / "groupx.json").write_text(json.dumps({"storage": {"url": url_of(cluster, "groupx_unit")}}))
    runs = [
        ({"GROUPX_CONFIG": str(folder / "groupx.json")}, [*PYTEST, "-p", "no:xdist", "tests/unit/test_sql_parity.py"]),
        ({}, [*PYTEST, "-n", "2", "--dist", "loadfile", *END_TO_END, "tests/pg"]),
        ({"GROUPX_SPLIT_TIER": "1"}, [*PYTEST, "-n", "2", "--dist", "loadfile", "tests/split/test_two_modes.py"]),
    ]
    failed = 0
    for env, command in runs:
        print("+", " ".join(command[2:]), flush=True)
        failed |= subprocess.run(command, env={**os.environ, **env}).returncode
    return failed


if __name__ == "__main__":
    sys.exit(main())

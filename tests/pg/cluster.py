"""A throwaway PostgreSQL cluster of the test run's own, for ``make test-pg`` (docs/DECISIONS.md D53).

``python -m tests.pg.cluster -- <command…>`` runs initdb in a temporary directory, starts the
server on 127.0.0.1 on a free port (its socket in that directory too), runs the command with
``GROUPX_TEST_PG_URL`` set to the cluster's ``postgres`` database, then stops the cluster and
removes it. PostgreSQL refuses to run as root: as root, the cluster runs as ``nobody`` (``runuser``).
``tests/server.py`` gives each test server a fresh database of its own from that URL.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.server import free_port as _free_port

UNPRIVILEGED_USER = "nobody"
SUPERUSER = "groupx"


def pg_bin(name: str) -> str:
    """A PostgreSQL server program: on PATH, else Debian's newest under /usr/lib/postgresql."""
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name), reverse=True)
    for folder in versions:
        if (folder / name).exists():
            return str(folder / name)
    raise FileNotFoundError(f"{name} not found: install Debian's postgresql (make test-pg does)")


def _as_owner(argv: list[str]) -> list[str]:
    return ["runuser", "-u", UNPRIVILEGED_USER, "--", *argv] if os.geteuid() == 0 else argv


class Cluster:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="groupx-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.url = f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    def start(self) -> Cluster:
        if os.geteuid() == 0:
            self.root.chmod(0o755)
            shutil.chown(self.root, UNPRIVILEGED_USER)
        subprocess.run(
            _as_owner(
                [
                    pg_bin("initdb"),
                    "-D",
                    str(self.data),
                    "-U",
                    SUPERUSER,
                    "-A",
                    "trust",
                    "-E",
                    "UTF8",
                    "--locale=C.UTF-8",
                    "--no-sync",
                ]
            ),
            check=True,
            capture_output=True,
            text=True,
            cwd=self.root,
        )
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.root} "
            "-c fsync=off -c max_connections=300 -c shared_buffers=64MB"
        )
        subprocess.run(
            _as_owner(
                [
                    pg_bin("pg_ctl"),
                    "-D",
                    str(self.data),
                    "-l",
                    str(self.root / "server.log"),
                    "-o",
                    options,
                    "-w",
                    "-t",
                    "60",
                    "start",
                ]
            ),
            check=True,
            capture_output=True,
            text=True,
            cwd=self.root,
        )
        return self

    def stop(self) -> None:
        subprocess.run(
            _as_owner([pg_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"]),
            capture_output=True,
            cwd=self.root,
        )
        shutil.rmtree(self.root, ignore_errors=True)


def main(argv: list[str]) -> int:
    command = argv[argv.index("--") + 1 :] if "--" in argv else argv
    cluster = Cluster().start()
    try:
        return subprocess.run(command, env={**os.environ, "GROUPX_TEST_PG_URL": cluster.url}).returncode
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Which agent CLIs this machine has (FEATURES §2.2 doctor, §2.3 setup snapshot).

Pure functions, no Django: ``groupx doctor`` runs before any settings exist. ``--version`` runs
with a timeout and no stdin, because a CLI that ignores the flag and starts its interactive mode
must not hang the page or the doctor.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from setup_wizard.config import DRIVERS

VERSION_TIMEOUT_SECONDS = 3.0
FAKES_BIN = Path(__file__).resolve().parent.parent / "agents" / "fakes" / "bin"

# (path, mtime) → version line: a version probe starts a whole CLI, so the setup page (which may be
# reloaded often) pays for it once per installed binary, not once per request.
_version_cache: dict[tuple[str, float], str | None] = {}


@dataclass(frozen=True)
class DriverStatus:
    driver: str
    found: bool
    command: str | None = None  # the absolute path the name resolves to on PATH
    version: str | None = None

    def as_json(self) -> dict:
        out: dict = {"driver": self.driver, "found": self.found}
        if self.command:
            out["command"] = self.command
        if self.version:
            out["version"] = self.version
        return out


def cli_version(path: str, *, timeout: float = VERSION_TIMEOUT_SECONDS) -> str | None:
    """The first non-empty line ``path --version`` prints, or None (timeout, crash, silence)."""
    try:
        key = (path, os.stat(path).st_mtime)
    except OSError:
        return None
    if key in _version_cache:
        return _version_cache[key]
    try:
        done = subprocess.run(
            [path, "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            errors="replace",
        )
        lines = [line.strip() for line in (done.stdout + "\n" + done.stderr).splitlines() if line.strip()]
        version = lines[0][:120] if done.returncode == 0 and lines else None
    except (OSError, subprocess.TimeoutExpired):
        version = None
    _version_cache[key] = version
    return version


def detect_drivers(*, with_versions: bool = True) -> list[DriverStatus]:
    """Exactly one entry per native driver, in the protocol's order; versions probed in parallel."""
    found = {driver: shutil.which(driver) for driver in DRIVERS}
    versions: dict[str, str | None] = {}
    if with_versions and any(found.values()):
        with ThreadPoolExecutor(max_workers=len(DRIVERS)) as pool:
            futures = {d: pool.submit(cli_version, p) for d, p in found.items() if p}
            versions = {d: f.result() for d, f in futures.items()}
    return [DriverStatus(d, bool(found[d]), found[d], versions.get(d)) for d in DRIVERS]


def demo_shims() -> dict[str, Path]:
    """driver → the bundled fake CLI speaking that driver's real wire protocol."""
    return {driver: FAKES_BIN / driver for driver in DRIVERS if (FAKES_BIN / driver).is_file()}

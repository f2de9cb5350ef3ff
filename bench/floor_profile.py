"""The profile beside ``python -m bench.floor``'s HTTP floor: where a server's CPU per request goes,
by package, sampled with py-spy (pinned in the test extra, D50) while it answers a further run of
the same requests (after the measured one, so the sampling costs nothing in the figures).

Each sample is counted for the package of its innermost Python frame (C code, system calls
included, is counted for the Python frame that called it): ``twisted``, ``daphne``, ``django``,
``ninja``, ``pydantic``, the standard library's module (``asyncio``, ``email``, …),
``groupx_site``, ``bench``; the largest innermost frames are named beside. Samples of a thread that
waits (``bench.profile_turn.IDLE``) are dropped.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from bench.profile_turn import IDLE


def py_spy() -> str | None:
    found = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    return found if Path(found).exists() else None


@contextlib.contextmanager
def sampled(pid: int, raw: Path, rate: int = 500):
    spy = subprocess.Popen(
        [py_spy(), "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw", "--output", str(raw)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1.0)  # py-spy attaches before the first sampled request (it prints nothing to wait on)
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
        try:
            spy.wait(timeout=60)
        except subprocess.TimeoutExpired:
            spy.kill()
            spy.wait()


def package(frame: str) -> str:
    """``function (path:line)`` → the package (or standard-library module) of the frame's file; py-spy
    writes the path relative to the ``sys.path`` entry it was imported from."""
    path = frame.rpartition(" (")[2].rstrip(")").rpartition(":")[0]
    if "site-packages/" in path:
        path = path.split("site-packages/", 1)[1]
    elif "/lib/python3" in path:
        path = path.split("/lib/python3", 1)[1].split("/", 1)[-1]  # past "/lib/python3.11/"
    return path.lstrip("/").split("/", 1)[0].removesuffix(".py") or frame


def shares(raw: Path) -> dict:
    """{"packages": [(package, share of the active samples)], "frames": [(innermost frame, share)]}, largest first."""
    packages: Counter = Counter()
    frames: Counter = Counter()
    lines = raw.read_text().splitlines() if raw.exists() else []  # py-spy could not attach: no profile
    for line in lines:
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        leaf = stack.split(";")[-1]
        if any(leaf.startswith(name) for name in IDLE):
            continue
        packages[package(leaf)] += int(count)
        frames[leaf.rpartition(":")[0] + ")"] += int(count)
    total = sum(packages.values())
    if not total:
        return {"packages": [], "frames": []}
    return {
        "packages": [(name, n / total) for name, n in packages.most_common()],
        "frames": [(name, n / total) for name, n in frames.most_common(5)],
    }


def summary(found: dict, top: int = 7) -> str:
    packages = found["packages"]
    shown = [f"{name} {share:.0%}" for name, share in packages[:top] if share >= 0.005]
    rest = sum(share for _, share in packages[top:])
    text = " · ".join(shown + ([f"other {rest:.0%}"] if rest >= 0.005 else []))
    frames = "; ".join(f"`{name}` {share:.0%}" for name, share in found["frames"][:4])
    return f"{text} (innermost frames: {frames})" if frames else text

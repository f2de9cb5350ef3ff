"""The server's resident memory, read from /proc the way the kernel counts it (fault tier, D37).

``VmHWM`` is the process's high-water resident set since it started: the kernel updates it, so it
catches a peak between two reads. A case's cost is the rise of that mark across the case, measured
from a server that has already done the ordinary work once (every lane started, every stream
path taken), so what is left is the cost of the fault itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.procs import status_bytes

MIB = 1024 * 1024


def peak_resident_bytes(pid: int) -> int:
    return status_bytes(pid, "VmHWM")


def resident_bytes(pid: int) -> int:
    return status_bytes(pid, "VmRSS")


@dataclass
class MemoryWatch:
    """The server's peak before a case, so ``rise()`` is what the case added to it."""

    pid: int
    peak_before: int = 0

    def __post_init__(self) -> None:
        self.peak_before = peak_resident_bytes(self.pid)

    def rise(self) -> int:
        return peak_resident_bytes(self.pid) - self.peak_before

    def report(self, case: str) -> str:
        """One line for the test's output (``-s``): the figures docs/RELIABILITY.md quotes."""
        return (
            f"[memory] {case}: peak {self.peak_before / MIB:.0f} -> {peak_resident_bytes(self.pid) / MIB:.0f} MiB"
            f" (+{self.rise() / MIB:.1f}), now {resident_bytes(self.pid) / MIB:.0f} MiB"
        )

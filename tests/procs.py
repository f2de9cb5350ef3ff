"""What /proc says of a test's server and its children (Linux only)."""

from __future__ import annotations

import os
from pathlib import Path


def status_field(pid: int, field: str) -> str:
    """The value of ``field`` in /proc/<pid>/status (``Cpus_allowed_list``, ``VmHWM`` …), as written."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def status_bytes(pid: int, field: str) -> int:
    """A memory field of /proc/<pid>/status in bytes (the kernel writes kB, that is KiB)."""
    return int(status_field(pid, field).split()[0]) * 1024


def descendants(pid: int) -> dict[int, list[str]]:
    """Every live process under ``pid`` and its argv, as /proc shows them to any local user."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as file:
                # "pid (comm) state ppid …": comm may hold spaces and parentheses, so split after the last ")".
                parents[int(entry)] = int(file.read().rpartition(")")[2].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone while we looked
    found, frontier = {}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, its_parent in parents.items():
            if its_parent == parent and child not in found:
                try:
                    with open(f"/proc/{child}/cmdline", "rb") as file:
                        found[child] = [arg.decode(errors="replace") for arg in file.read().split(b"\0") if arg]
                except OSError:
                    continue
                frontier.append(child)
    return found

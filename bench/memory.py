"""Peak resident memory of the server: VmHWM of the daphne process and of each child (the agent
CLIs), read from /proc. VmHWM is the kernel's own high-water mark since the process started, so it
catches peaks between samples; read it just before the server stops."""

from __future__ import annotations

from pathlib import Path

PROC = Path("/proc")


def _status(pid: int) -> dict[str, str]:
    try:
        lines = (PROC / str(pid) / "status").read_text().splitlines()
    except OSError:
        return {}
    return dict(line.split(":", 1) for line in lines if ":" in line)


def _kib(value: str | None) -> int:
    return int(value.split()[0]) if value else 0


def children(pid: int) -> list[int]:
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the command name (field 2) may hold spaces: the parent pid comes after its closing ")"
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def peak_rss(pid: int) -> dict:
    """{"server": {...}, "children": [...]} with peak and current RSS in MiB."""

    def entry(p: int) -> dict:
        status = _status(p)
        return {
            "pid": p,
            "name": status.get("Name", "?").strip(),
            "peakMiB": round(_kib(status.get("VmHWM")) / 1024, 1),
            "rssMiB": round(_kib(status.get("VmRSS")) / 1024, 1),
        }

    pending, found = children(pid), []
    while pending and len(found) < 64:  # bounded walk over the process tree
        child = pending.pop()
        found.append(entry(child))
        pending.extend(children(child))
    return {"server": entry(pid), "children": found}


def cpu_seconds(pid: int) -> float:
    """User + system CPU of one process so far (utime + stime from /proc/<pid>/stat)."""
    import os

    try:
        fields = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # fields 14 and 15 of stat(5)

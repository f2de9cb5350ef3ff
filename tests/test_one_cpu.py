"""The server's threads share one CPU, and the agents' CLIs it starts may use every CPU
(groupx_site/core/one_cpu.py, docs/DECISIONS.md D83)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.server import wait_until

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="pinning threads needs Linux's thread affinity and at least two CPUs")


def allowed_cpus(status: Path) -> str:
    """``Cpus_allowed_list`` of a /proc status file, as the kernel writes it ("0-1", "1")."""
    for line in status.read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no Cpus_allowed_list in {status}")


def threads_cpus(pid: int) -> set[str]:
    return {allowed_cpus(task / "status") for task in Path(f"/proc/{pid}/task").iterdir()}


def child_pids(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # ended meanwhile
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def test_every_thread_of_the_server_shares_one_cpu_and_its_agents_cli_may_use_them_all(make_server):
    server = make_server()  # one agent whose CLI waits forever: a child of the server's
    everything = allowed_cpus(Path("/proc/self/status"))
    cli = wait_until(lambda: child_pids(server.proc.pid), message="the agent's CLI to start")[0]

    pinned = threads_cpus(server.proc.pid)
    assert len(pinned) == 1 and pinned.pop().isdigit()  # one CPU, the same for every thread
    assert len(list(Path(f"/proc/{server.proc.pid}/task").iterdir())) > 2  # the writer's, the readers'…
    assert allowed_cpus(Path(f"/proc/{cli}/status")) == everything


def test_a_room_that_turns_it_off_leaves_its_threads_on_every_cpu(make_server):
    server = make_server(server={"host": "127.0.0.1", "port": 4310, "threadsOnOneCpu": False})
    assert threads_cpus(server.proc.pid) == {allowed_cpus(Path("/proc/self/status"))}

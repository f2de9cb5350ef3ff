"""The server's threads share one CPU, and the agents' CLIs it starts may use every CPU
(groupx_site/speedups/one_cpu.py, docs/DECISIONS.md D83)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.procs import descendants, status_field
from tests.server import SPEEDUPS_OFF, wait_until

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="pinning threads needs Linux's thread affinity and at least two CPUs",
)


def threads_cpus(pid: int) -> set[str]:
    """``Cpus_allowed_list`` of each thread of ``pid``, as the kernel writes it ("0-1", "1")."""
    return {status_field(int(task.name), "Cpus_allowed_list") for task in Path(f"/proc/{pid}/task").iterdir()}


@pytest.mark.skipif(SPEEDUPS_OFF, reason="make test-plain: the speedups, this one included, are off")
def test_every_thread_of_the_server_shares_one_cpu_and_its_agents_cli_may_use_them_all(make_server):
    server = make_server()  # one agent whose CLI waits forever: a child of the server's
    everything = status_field(os.getpid(), "Cpus_allowed_list")
    cli = next(iter(wait_until(lambda: descendants(server.proc.pid), message="the agent's CLI to start")))

    pinned = threads_cpus(server.proc.pid)
    assert len(pinned) == 1 and pinned.pop().isdigit()  # one CPU, the same for every thread
    assert len(list(Path(f"/proc/{server.proc.pid}/task").iterdir())) > 2  # the writer's, the readers'…
    assert status_field(cli, "Cpus_allowed_list") == everything


def test_a_room_that_turns_it_off_leaves_its_threads_on_every_cpu(make_server):
    server = make_server(server={"host": "127.0.0.1", "port": 4310, "threadsOnOneCpu": False})
    assert threads_cpus(server.proc.pid) == {status_field(os.getpid(), "Cpus_allowed_list")}


def test_the_speedups_switch_turns_it_off_too(make_server):
    server = make_server(server={"host": "127.0.0.1", "port": 4310, "speedups": {"threadsOnOneCpu": False}})
    assert threads_cpus(server.proc.pid) == {status_field(os.getpid(), "Cpus_allowed_list")}
    assert server.get("/api/health").json()["speedups"]["threadsOnOneCpu"] is False

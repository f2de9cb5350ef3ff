"""Each way a CLI can misbehave fails that CLI's own Turn only, within a stated memory bound (D37).

One room holds the three wires (Kimi over ACP, Codex, Claude). One agent misbehaves while the
other two each run a Turn of their own at the same time: the misbehaving Turn fails with the
protocol's code, the other two complete, the misbehaving agent's next Turn runs on a rebuilt
session (a new instance), and the server's peak resident memory rose by less than the bound.
Timeouts are far beyond any test (only ``cancelMs`` is short, for the CLI that ignores a cancel),
so every Turn that ends did so because the broker noticed, not because a timer ran out.
"""

from __future__ import annotations

import pytest

from tests.agents import cancel, fake_agents, send, turn_events, wait_terminal
from tests.faults.memory_watch import MIB, MemoryWatch
from tests.server import wait_until

DRIVERS = ("kimi", "codex", "claude")
TIMEOUTS = {"handshakeMs": 600_000, "closeMs": 300, "firstEventMs": 600_000, "idleMs": 600_000, "cancelMs": 500}
# The server's peak resident memory may rise by at most this much while one CLI misbehaves
# (docs/DECISIONS.md D37: D23's per-CLI worst case, ~35 MiB for Claude, plus allocator slack).
MEMORY_BOUND_BYTES = 48 * MIB
# A Turn of its own for each healthy agent, streamed while the other one misbehaves.
HEALTHY_TURN = "[[fake: stream n=20 delay_ms=25 text=healthy-reply-streamed-in-twenty-pieces]]"

# What each misbehaviour is, in the fakes' directives (agents/fakes/README.md).
MISBEHAVIOURS = {
    "garbage": "[[fake: reply text=x; garbage kind=not_json]]",
    "invalid-utf8": "[[fake: reply text=x; garbage kind=invalid_utf8]]",
    "ten-mb-line": "[[fake: reply text=x; garbage kind=huge_line size_mb=10]]",
    "flood": "[[fake: flood chunk=65536 n=200]]",  # 12.5 Mi characters, 12 times the reply cap
    "closed-stdin": "[[fake: close-stdin]]",
    "wrong-id": "[[fake: wrong-id]]",
    "exit-mid-turn": "[[fake: crash code=7 after=delta]]",
    "ignores-cancel": "[[fake: hang ignore_cancel=1]]",
}
# The terminal each one ends in (PROTOCOL §5, D23 and D38): a frame the wire cannot carry and a
# process gone (an exit, a closed stdin) are PROTOCOL_INVALID_MESSAGE on every driver; a cancel the
# CLI never confirms within ``cancelMs`` is TURN_CANCEL_TIMEOUT (NATIVE_PROTOCOLS §1.6, PROTOCOL's
# cancelling -> failed).
PROTOCOL_FAULT = ("turn.failed", "PROTOCOL_INVALID_MESSAGE")
PROCESS_GONE = dict.fromkeys(DRIVERS, PROTOCOL_FAULT)
EXPECTED = {
    "garbage": dict.fromkeys(DRIVERS, PROTOCOL_FAULT),
    "invalid-utf8": dict.fromkeys(DRIVERS, PROTOCOL_FAULT),
    "ten-mb-line": dict.fromkeys(DRIVERS, PROTOCOL_FAULT),
    "flood": dict.fromkeys(DRIVERS, ("turn.failed", "MESSAGE_TOO_LARGE")),
    "closed-stdin": PROCESS_GONE,
    "wrong-id": dict.fromkeys(DRIVERS, PROTOCOL_FAULT),
    "exit-mid-turn": PROCESS_GONE,
    "ignores-cancel": dict.fromkeys(DRIVERS, ("turn.failed", "TURN_CANCEL_TIMEOUT")),
}


@pytest.fixture(scope="module")
def rooms(tmp_path_factory):
    """One room per misbehaving wire, shared by its eight cases: each case leaves the room as it
    found it (every lane idle), which the next case's healthy Turns check again."""
    from tests.server import GroupXServer

    started: dict[str, GroupXServer] = {}

    def room_for(driver: str) -> GroupXServer:
        if driver not in started:
            workdir = tmp_path_factory.mktemp(f"misbehaving-{driver}")
            server = GroupXServer(
                workdir,
                {
                    "server": {"host": "127.0.0.1", "port": 4310},
                    "timeouts": TIMEOUTS,
                    "agents": fake_agents(workdir, *DRIVERS),
                },
            )
            started[driver] = server.start()
            everyone_answers(started[driver])  # every lane has run once: what follows is the fault's own cost
        return started[driver]

    yield room_for
    for server in started.values():
        server.stop()


def everyone_answers(server) -> None:
    accepted = send(server, "@all", "still there?")
    assert [wait_terminal(server, t["turnId"])["type"] for t in accepted["turns"]] == ["turn.completed"] * 3


def started_instance(server, turn_id: str) -> str:
    return next(e["actor"]["instanceId"] for e in turn_events(server, turn_id) if e["type"] == "turn.started")


def has_started(server, turn_id: str) -> bool:
    return any(e["type"] == "turn.started" for e in turn_events(server, turn_id))


@pytest.mark.parametrize("misbehaviour", list(MISBEHAVIOURS))
@pytest.mark.parametrize("driver", DRIVERS)
def test_a_misbehaving_cli_fails_only_its_own_turn_within_the_memory_bound_and_then_runs_on_a_new_session(
    rooms, driver, misbehaviour
):
    room = rooms(driver)
    healthy = [d for d in DRIVERS if d != driver]
    last_good = send(room, f"agent:{driver}", "before the fault")["turns"][0]["turnId"]
    assert wait_terminal(room, last_good)["type"] == "turn.completed"
    memory = MemoryWatch(room.proc.pid)

    good = [send(room, f"agent:{name}", HEALTHY_TURN)["turns"][0]["turnId"] for name in healthy]
    wait_until(
        lambda: all(has_started(room, turn_id) for turn_id in good), timeout=30, message="the healthy Turns to start"
    )
    bad = send(room, f"agent:{driver}", MISBEHAVIOURS[misbehaviour])["turns"][0]["turnId"]
    if misbehaviour == "ignores-cancel":
        wait_until(lambda: has_started(room, bad), timeout=30, message="the hanging Turn to start")
        cancel(room, bad)
    terminal = wait_terminal(room, bad, timeout=90)
    healthy_terminals = [wait_terminal(room, turn_id, timeout=90) for turn_id in good]
    print(memory.report(f"{driver} {misbehaviour}"))

    assert (terminal["type"], terminal["body"].get("errorCode")) == EXPECTED[misbehaviour][driver], terminal
    assert [t["type"] for t in healthy_terminals] == ["turn.completed", "turn.completed"], healthy_terminals
    assert memory.rise() < MEMORY_BOUND_BYTES
    after = send(room, f"agent:{driver}", "are you back?")["turns"][0]["turnId"]
    assert wait_terminal(room, after, timeout=60)["type"] == "turn.completed"
    assert started_instance(room, after) != started_instance(room, last_good)

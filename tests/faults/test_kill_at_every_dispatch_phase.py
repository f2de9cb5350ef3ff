"""SIGKILL at every dispatch phase, under load (docs/DECISIONS.md D36).

A real server with three fake agents on three wires (ACP, Codex, Claude) takes messages from
concurrent posters. The test-only hook (``agents/fault_points.py``) stops the dispatch path at one
named phase after a few Turns went through; the test waits for the hook's marker file and SIGKILLs
the server there, then starts it again on the same database, config and port, armed for the next
phase. Posters retry what got no answer with the same ``clientCommandId``, as a real client does
across a restart, and after each restart re-send the last message they saw accepted (a client
that lost the 202). Twenty cycles cover each of the five phases four times; then a server with the
hook unarmed drains the queue and the whole history is checked:

- every message that got a 202 is in the log, once;
- no prompt reached a CLI twice (the fakes' own wire logs, which a SIGKILL of the server does not
  touch);
- the log's seq is 1..N without a gap;
- every Turn has exactly one terminal event, and the one the hook stopped ended as restart
  recovery says for its phase (PROTOCOL §5).

The figures are recorded for the tier's summary (tests/faults/conftest.py) and quoted in
docs/RELIABILITY.md.
"""

from __future__ import annotations

import json
import random
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.agents import db_rows, fake_agents, wire
from tests.server import GroupXServer, peak_resident_bytes, wait_until

PHASES = ("queued", "before-write-ahead", "after-write-ahead", "running", "completing")
CYCLES = 20
AGENTS = ("kimi", "codex", "claude")
POSTERS = 4
# How many arrivals at the armed phase pass before it stops (drawn per cycle): real work between kills.
PASS_FIRST = (5, 30)
# A refused command writes nothing and may be retried under its id (FEATURES §6.5): 503 while the
# server starts, 429 while the stopped lanes' queues are full (64 unfinished Turns per agent).
RETRY_LATER = {429, 503}
TERMINALS = {"turn.completed", "turn.failed", "turn.cancelled", "turn.interrupted"}
# What restart recovery does with a Turn killed at each phase (PROTOCOL §5): the next event of that
# Turn after the kill, and how many prompts its CLI ever got (None: it may run again later, so the
# global checks decide). Never sent → back in the queue, dispatched again; the write-ahead or more
# → interrupted at once, and never prompted again.
RECOVERED_AS = {
    "queued": ("turn.dispatched", None),
    "before-write-ahead": ("turn.dispatched", None),
    "after-write-ahead": ("turn.interrupted", 0),
    # The prompt is written to the CLI's pipe, and the ACP and Claude drivers record turn.started
    # as they write it: whether the fake read (and logged) it before the kill and the restart's
    # sweep of stale launches ended it is the scheduler's race, so at most once, not exactly once.
    "running": ("turn.interrupted", None),
    "completing": ("turn.interrupted", 1),
}
TOKEN = re.compile(r"\bsoak-[a-z0-9]+-\d+\b")
CURRENT_MESSAGE = re.compile(r"^[ \t]*\[(?:groupx_)?current_message\][ \t]*$", re.MULTILINE)


@dataclass
class Poster:
    """A client posting messages, each retried with its ``clientCommandId`` until it is answered."""

    name: str
    base_url: str
    stop: threading.Event
    restarts: list[int]  # shared: its length is how many times the server came back
    rng: random.Random
    accepted: dict[str, dict] = field(default_factory=dict)  # token → the 202's body
    sent: dict[str, dict] = field(default_factory=dict)  # token → the request's body
    replays: list[tuple[dict, dict]] = field(default_factory=list)  # (first 202, the re-sent one's 202)
    refused: list[str] = field(default_factory=list)  # any answer but 202 or one to retry later
    retries: int = 0  # no answer (the server was down or killed) or a 503
    queue_full: int = 0  # 429 QUEUE_CAPACITY_REACHED: the lanes are stopped, their queues full

    def run(self) -> None:
        seen_restarts, number = 0, 0
        with httpx.Client(timeout=httpx.Timeout(30, connect=5)) as client:
            while not self.stop.is_set():
                if len(self.restarts) != seen_restarts and self.accepted:
                    seen_restarts = len(self.restarts)
                    self._resend_last(client)
                token = f"soak-{self.name}-{number}"
                number += 1
                targets = self.rng.sample(AGENTS, self.rng.choice((1, 1, 2)))
                body = {
                    "clientCommandId": f"cid-{token}",
                    "to": [f"agent:{a}" for a in targets],
                    "content": f"{token} from {self.name}",
                }
                answer = self._post_until_answered(client, body)
                if answer is not None:
                    self.accepted[token], self.sent[token] = answer, body

    def _resend_last(self, client: httpx.Client) -> None:
        token = next(reversed(self.accepted))
        first = self.accepted[token]
        again = self._post_until_answered(client, self.sent[token])
        if again is not None:
            self.replays.append((first, again))

    def _post_until_answered(self, client: httpx.Client, body: dict) -> dict | None:
        """The 202's body; None if the test ended first. A refused message counts in ``refused``."""
        while True:
            try:
                response = client.post(f"{self.base_url}/api/messages", json=body)
            except httpx.HTTPError:
                response = None  # the server is down or was killed mid-request: retry the same id
            if response is not None and response.status_code == 202:
                return response.json()
            if response is not None and response.status_code not in RETRY_LATER:
                self.refused.append(f"{response.status_code} {response.text[:200]}")
                return None
            full = response is not None and response.status_code == 429
            self.queue_full += full
            self.retries += not full
            # A client's pacing between retries; what the test waits on is the answer.
            if self.stop.wait(0.2 if full else 0.05) and response is None and not self._server_up(client):
                return None

    def _server_up(self, client: httpx.Client) -> bool:
        try:
            return client.get(f"{self.base_url}/api/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False


@dataclass
class Stop:
    """A Turn the hook stopped at ``phase`` when the server was killed with the log at ``head``."""

    phase: str
    turn_id: str
    head: int


class Soak:
    """One room's database, config and port across every kill and restart."""

    def __init__(self, workdir: Path):
        self.fault_dir = workdir / "fault"
        self.fault_dir.mkdir(parents=True)
        self.marker = self.fault_dir / "paused"
        self.server = GroupXServer(
            workdir,
            {
                "server": {"host": "127.0.0.1", "port": 4310},
                "timeouts": {"handshakeMs": 600000, "closeMs": 300},
                "agents": fake_agents(workdir, *AGENTS),
            },
        )
        self.port = 0
        self.peak_rss = 0
        self.kills: list[str] = []  # the phase of each kill
        self.stops: list[Stop] = []  # every Turn a kill caught at its phase

    def start(self, phase: str | None, pass_first: int = 0) -> None:
        """Start (again) on the same database and port, the hook armed for ``phase`` (or not)."""
        self.marker.unlink(missing_ok=True)
        self.server.env.update(
            {
                "GROUPX_FAULT_PAUSE_AT": phase or "",
                "GROUPX_FAULT_PAUSE_AFTER": str(pass_first),
                "GROUPX_FAULT_DIR": str(self.fault_dir),
            }
        )
        self.server.start(port=self.port, migrate=self.port == 0, timeout=120)
        self.port = self.server.port

    def kill_when_stopped_at(self, phase: str) -> None:
        pid = self.server.proc.pid
        wait_until(lambda: self._stopped(pid), timeout=120, message=f"the dispatch path to stop at {phase}")
        self.peak_rss = max(self.peak_rss, peak_resident_bytes(pid))
        self.server.kill()
        head = db_rows(self.server, "SELECT COALESCE(MAX(seq), 0) AS head FROM rooms_event")[0]["head"]
        stopped = self._stopped(pid)  # final now: the process is dead
        assert {line["phase"] for line in stopped} == {phase}
        self.kills.append(phase)
        self.stops += [Stop(phase, line["turnId"], head) for line in stopped]

    def _stopped(self, pid: int) -> list[dict]:
        try:
            text = self.marker.read_text()
        except FileNotFoundError:
            return []
        lines = [json.loads(line) for line in text.splitlines(keepends=True) if line.endswith("\n")]
        assert all(line["pid"] == pid for line in lines)
        return lines


def prompted(server: GroupXServer) -> Counter:
    counts: Counter = Counter()
    for record in wire(server, kind="in"):
        tokens = set()
        for text in _strings(record["msg"]):
            parts = CURRENT_MESSAGE.split(text)
            if len(parts) > 1:  # a prompt: only the message after the last marker is its own
                tokens.update(TOKEN.findall(parts[-1]))
        for token in tokens:
            counts[(record["flavor"], token)] += 1
    return counts


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def no_turn_in_flight(server: GroupXServer) -> bool:
    return not db_rows(
        server,
        "SELECT 1 FROM turns_turn WHERE status NOT IN ('completed', 'failed', 'cancelled', 'interrupted') LIMIT 1",
    )


class History:
    """The log once every Turn has ended, read the way a client reads it (SSE replay from 0)."""

    def __init__(self, server: GroupXServer):
        self.events = server.events()
        self.messages = Counter(
            match.group()
            for e in self.events
            if e["type"] == "message.created" and (match := TOKEN.match(e["body"].get("content", "")))
        )
        self.message_ids = {e["eventId"] for e in self.events if e["type"] == "message.created"}
        self.tokens = {
            e["eventId"]: match.group()
            for e in self.events
            if e["type"] == "message.created" and (match := TOKEN.match(e["body"].get("content", "")))
        }
        self.turns = {e["body"]["turnId"]: e["body"] for e in self.events if e["type"] == "turn.queued"}
        self.by_turn: dict[str, list[dict]] = {}
        for e in self.events:
            if "turnId" in e["body"]:
                self.by_turn.setdefault(e["body"]["turnId"], []).append(e)

    def terminals(self, turn_id: str) -> list[dict]:
        return [e for e in self.by_turn.get(turn_id, []) if e["type"] in TERMINALS]

    def agent_and_token(self, turn_id: str) -> tuple[str, str]:
        turn = self.turns[turn_id]
        return turn["targetActorId"].removeprefix("agent:"), self.tokens[turn["sourceEventId"]]

    def first_after(self, turn_id: str, seq: int) -> str | None:
        return next((e["type"] for e in self.by_turn[turn_id] if e["seq"] > seq), None)


def run_cycles(soak: Soak, restarts: list[int], rng: random.Random) -> None:
    for cycle in range(CYCLES):
        phase = PHASES[cycle % len(PHASES)]
        if cycle:
            soak.start(phase, pass_first=rng.randrange(*PASS_FIRST))
            restarts.append(cycle)
        soak.kill_when_stopped_at(phase)
    soak.start(None)  # unarmed: restart recovery, then the queues drain
    restarts.append(CYCLES)


@pytest.fixture
def soak(tmp_path):
    soak = Soak(tmp_path / "soak")
    yield soak
    soak.server.stop()  # the last server, or the one a failure left running


@pytest.mark.timeout(1200)  # twenty restarts: ~3 minutes alone on 2 cores, far more on a shared machine
def test_sigkill_at_every_dispatch_phase_under_load_loses_no_message_resends_no_prompt_and_ends_every_turn_once(
    soak, record_property
):
    rng = random.Random(17)
    stop, restarts = threading.Event(), []
    soak.start(PHASES[0], pass_first=rng.randrange(*PASS_FIRST))
    posters = [Poster(f"p{i}", soak.server.base_url, stop, restarts, random.Random(i)) for i in range(POSTERS)]
    threads = [threading.Thread(target=p.run, name=f"poster-{p.name}", daemon=True) for p in posters]
    for thread in threads:
        thread.start()
    try:
        run_cycles(soak, restarts, rng)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=90)
    server = soak.server
    assert not any(thread.is_alive() for thread in threads), "a poster never got its last answer"
    wait_until(lambda: no_turn_in_flight(server), timeout=300, interval=0.2, message="every Turn to end")
    soak.peak_rss = max(soak.peak_rss, peak_resident_bytes(server.proc.pid))

    log, prompts = History(server), prompted(server)
    accepted = {token: answer for poster in posters for token, answer in poster.accepted.items()}
    lost = [token for token, answer in accepted.items() if answer["messageEventId"] not in log.message_ids]
    ends = Counter(log.terminals(turn_id)[-1]["type"] for turn_id in log.turns if log.terminals(turn_id))
    figures = {
        "cycles": CYCLES,
        "killsPerPhase": dict(Counter(soak.kills)),
        "turnsCaughtAtTheirPhase": len(soak.stops),
        "acceptedMessages": len(accepted),
        "turns": len(log.turns),
        "events": len(log.events),
        "lost": len(lost),
        "prompts": sum(prompts.values()),
        "replayedPrompts": sum(count - 1 for count in prompts.values() if count > 1),
        "completed": ends["turn.completed"],
        "interrupted": ends["turn.interrupted"],
        "otherEnds": sum(ends.values()) - ends["turn.completed"] - ends["turn.interrupted"],
        "clientRetries": sum(p.retries for p in posters),
        "queueFullAnswers": sum(p.queue_full for p in posters),
        "resentAfterRestart": sum(len(p.replays) for p in posters),
        "peakServerRssMiB": round(soak.peak_rss / 2**20, 1),
    }
    record_property("figures", figures)

    assert [p.refused for p in posters] == [[]] * POSTERS
    assert lost == []
    assert [token for token in accepted if log.messages[token] != 1] == []  # each accepted message once
    # A command re-sent after a restart answers what it answered the first time.
    assert [(first, again) for p in posters for first, again in p.replays if first != again] == []
    assert [e["seq"] for e in log.events] == list(range(1, len(log.events) + 1))
    assert len(log.turns) == len(db_rows(server, "SELECT turn_id FROM turns_turn"))
    assert [turn_id for turn_id in log.turns if len(log.terminals(turn_id)) != 1] == []
    assert [key for key, count in prompts.items() if count > 1] == []
    completed = [t for t in log.turns if log.terminals(t)[0]["type"] == "turn.completed"]
    assert [t for t in completed if prompts[log.agent_and_token(t)] != 1] == []
    assert Counter(soak.kills) == {phase: CYCLES // len(PHASES) for phase in PHASES}
    # What restart recovery did with each Turn a kill caught at its phase (PROTOCOL §5).
    for stop_ in soak.stops:
        next_event, prompt_count = RECOVERED_AS[stop_.phase]
        caught = (stop_.phase, log.first_after(stop_.turn_id, stop_.head))
        assert caught == (stop_.phase, next_event), stop_
        if prompt_count is not None:
            assert prompts[log.agent_and_token(stop_.turn_id)] == prompt_count, stop_

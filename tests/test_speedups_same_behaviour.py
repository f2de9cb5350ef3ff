"""Each of the speed seam's mechanisms changes how fast, never what: the same script of posts and
Turns gives the same event rows, Turn rows and SSE frames with the mechanism on and off
(groupx_site/speedups/switches.py, docs/DECISIONS.md D130).

Each setting runs a real server of its own with one fake CLI, and the script runs one Turn at a time,
so nothing but the mechanism differs between two runs. Ids, timestamps and durations differ between
any two runs; they are replaced by the order in which each first appears."""

from __future__ import annotations

import re

import pytest

from groupx_site.speedups import switches as speedups_switches
from tests.agents import db_rows, fake_agents, send, wait_terminal
from tests.sse import SseClient

SCRIPT = ("first, a plain question", "second: the same agent again, after the first has finished")
ID_LIKE = re.compile(r"bind_[A-Za-z0-9_-]{16,}|[0-9a-f]{8,}")  # session bindings are base64url
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d")
VARYING_NUMBER = re.compile(r"(At|Ms|Seconds|_at|_ms|pid|Pid)$")


class Normaliser:
    """Every id-like string becomes ``<id N>`` by first appearance; times and durations ``<varies>``."""

    def __init__(self):
        self.ids: dict[str, str] = {}

    def __call__(self, value, key: str = ""):
        if isinstance(value, dict):
            return {k: self(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v, key) for v in value]
        if isinstance(value, str):
            if TIMESTAMP.match(value):
                return "<varies>"
            return ID_LIKE.sub(lambda m: self.ids.setdefault(m.group(), f"<id {len(self.ids)}>"), value)
        if isinstance(value, int | float) and not isinstance(value, bool) and VARYING_NUMBER.search(key):
            return "<varies>"
        return value


def run_script(make_server, workdir, speedups) -> dict:
    server = make_server(fake_agents(workdir, "kimi"), server={"host": "127.0.0.1", "port": 4310, "speedups": speedups})
    assert server.get("/api/health").json()["speedups"] == speedups_switches.resolve(speedups)
    with SseClient(server.base_url, after_seq=0) as stream:
        stream.wait_for(lambda e: e["type"] == "session.ready", message="the CLI's session")  # one order of events
        for content in SCRIPT:
            turn_id = send(server, "agent:kimi", content)["turns"][0]["turnId"]
            terminal = wait_terminal(server, turn_id)
        stream.wait_for_seq(terminal["seq"])
        frames = [e for e in list(stream.durable) + list(stream.transient) if e.get("type") != "heartbeat"]
    normalise = Normaliser()
    return {
        "events": normalise(db_rows(server, "SELECT * FROM rooms_event ORDER BY seq")),
        "turns": normalise(db_rows(server, "SELECT * FROM turns_turn ORDER BY enqueue_seq")),
        "durable frames": normalise(list(stream.durable)),
        "transient frames": [
            (e["type"], e["body"].get("delta", e["body"].get("text"))) for e in frames if e["seq"] is None
        ],
    }


@pytest.mark.parametrize("mechanism", speedups_switches.NAMES)
def test_the_same_script_gives_the_same_rows_and_frames_with_the_mechanism_on_and_off(make_server, tmp_path, mechanism):
    on = run_script(make_server, tmp_path / "on", {mechanism: True})
    off = run_script(make_server, tmp_path / "off", {mechanism: False})
    assert off == on


def test_the_same_script_gives_the_same_rows_and_frames_with_every_mechanism_off(make_server, tmp_path):
    assert run_script(make_server, tmp_path / "off", False) == run_script(make_server, tmp_path / "on", True)

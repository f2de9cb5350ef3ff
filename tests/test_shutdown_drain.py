"""A stop drains (PROTOCOL §10.8): once it is accepted new writes get 503 ``STORE_UNAVAILABLE`` and
health says ``closing``; every write answered 202 before that is in the log exactly once after the
next start, and its Turns run to an end there."""

from __future__ import annotations

import json
import threading
import uuid

import httpx

from tests.server import GroupXServer, fake_agent, wait_until

TERMINALS = {"turn.completed", "turn.failed", "turn.cancelled", "turn.interrupted"}
CLIENTS = 4


def slow_to_close_room(workdir) -> GroupXServer:
    """One fake agent that replies at once but ignores SIGTERM and EOF, so closing its CLI takes the
    whole close timeout: the drain lasts long enough to be asked what it answers."""
    agent = fake_agent("kimi", workdir)
    (workdir / "cwd-kimi" / ".groupx-fake.json").write_text(json.dumps({"ignore_sigterm": True, "ignore_eof": True}))
    config = {"agents": {"alpha": agent}, "timeouts": {"handshakeMs": 20000, "closeMs": 3000}}
    return GroupXServer(workdir, config)


class Client(threading.Thread):
    """Posts messages one after another until the server refuses or is gone; keeps every answer."""

    def __init__(self, server: GroupXServer, stop: threading.Event):
        super().__init__(daemon=True)
        self.server, self.stop = server, stop
        self.accepted: list[dict] = []
        self.refused: list[httpx.Response] = []

    def run(self) -> None:
        with httpx.Client(base_url=self.server.base_url, timeout=30) as http:
            while not self.stop.is_set():
                body = {"clientCommandId": f"drain-{uuid.uuid4()}", "to": ["agent:alpha"], "content": "hello"}
                try:
                    response = http.post("/api/messages", json=body)
                except httpx.TransportError:  # the listener is gone: the stop is over
                    return
                if response.status_code == 202:
                    self.accepted.append(response.json())
                else:
                    self.refused.append(response)
                    if response.status_code == 503:
                        return


def test_writes_racing_a_stop_are_each_kept_once_or_refused_with_a_code(tmp_path):
    server = slow_to_close_room(tmp_path).start()
    stop = threading.Event()
    clients = [Client(server, stop) for _ in range(CLIENTS)]
    for client in clients:
        client.start()
    wait_until(lambda: sum(len(c.accepted) for c in clients) >= 20, timeout=60, message="twenty accepted posts")
    scope_key = server.get("/api/health").json()["runtimeScopeKey"]

    assert server.post("/api/runtime/shutdown", {"runtimeScopeKey": scope_key}).status_code == 202
    for client in clients:
        client.join(timeout=60)
    stop.set()
    assert server.proc.wait(timeout=60) == 0

    refusals = [response for client in clients for response in client.refused]
    for response in refusals:
        assert response.json()["error"]["code"], response.text
    assert all(r.json()["error"]["code"] in ("STORE_UNAVAILABLE", "QUEUE_CAPACITY_REACHED") for r in refusals)
    accepted = [answer for client in clients for answer in client.accepted]

    server.start()
    events = server.events()
    created = [e["eventId"] for e in events if e["type"] == "message.created"]
    for answer in accepted:
        assert created.count(answer["messageEventId"]) == 1
    turn_ids = {turn["turnId"] for answer in accepted for turn in answer["turns"]}

    def every_turn_ended():
        ended = {e["body"]["turnId"] for e in server.events() if e["type"] in TERMINALS}
        return turn_ids <= ended

    wait_until(every_turn_ended, timeout=60, message="every accepted Turn to end after the restart")
    server.stop()


def test_while_a_stop_drains_health_says_closing_and_a_write_gets_503_store_unavailable(tmp_path):
    server = slow_to_close_room(tmp_path).start()
    identity = server.get("/api/health").json()

    assert server.post("/api/runtime/shutdown", {"runtimeScopeKey": identity["runtimeScopeKey"]}).status_code == 202
    health = wait_until(
        lambda: (r := server.get("/api/health")).status_code == 503 and r,
        timeout=20,
        message="health to answer 503 while draining",
    )
    refused = server.post(
        "/api/messages", {"clientCommandId": f"late-{uuid.uuid4()}", "to": ["agent:alpha"], "content": "too late"}
    )

    assert health.json() == {
        "status": "closing",
        "readiness": "closing",
        "service": "groupx",
        "protocol": "groupx.runtime/1",
        "runtimeKey": identity["runtimeKey"],
        "runtimeScopeKey": identity["runtimeScopeKey"],
        "version": identity["version"],
    }
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "STORE_UNAVAILABLE"
    assert server.proc.wait(timeout=60) == 0
    server.start()
    assert "too late" not in [e["body"].get("content") for e in server.events() if e["type"] == "message.created"]
    server.stop()

"""The end-to-end promises of split mode (D43, D45, D46), in both modes from one fixture (``conftest.py``):
the embedded default and split mode (web processes and an agents' worker over Redis)."""

from __future__ import annotations

import pytest

from tests.agents import cancel, prompts_sent, send, turn_events, wait_terminal
from tests.server import wait_until
from tests.split.processes import doctor
from tests.sse import SseClient

TURN_DEADLINE = 60  # a loaded 2-core machine runs five suites at once: deadlines, not sleeps


def wait_started(web, turn_id: str) -> None:
    wait_until(
        lambda: any(e["type"] == "turn.started" for e in turn_events(web, turn_id)),
        timeout=TURN_DEADLINE,
        message=f"{turn_id} to start",
    )


def test_at_all_streams_every_agents_reply_to_a_stream_the_web_process_serves(mode_room):
    web = mode_room.web
    with SseClient(web.base_url, after_seq=web.get("/api/bootstrap").json()["room"]["throughSeq"]) as stream:
        accepted = send(web, "@all", '[[fake: stream n=3 delay_ms=5 text="one two three"]]')
        turn_ids = {turn["turnId"] for turn in accepted["turns"]}
        assert len(turn_ids) == 2
        for turn_id in turn_ids:
            stream.wait_for(
                lambda e, t=turn_id: e["type"] == "turn.content.delta" and e["body"]["turnId"] == t,
                timeout=TURN_DEADLINE,
                message=f"a content delta of {turn_id}",
            )
            stream.wait_for(
                lambda e, t=turn_id: e["type"] == "turn.completed" and e["body"]["turnId"] == t,
                timeout=TURN_DEADLINE,
                message=f"the completion of {turn_id}",
            )
        replies = [e for e in stream.durable if e["type"] == "message.created" and e["body"].get("turnId") in turn_ids]
        assert len(replies) == 2


def test_a_queued_and_a_running_turn_are_cancelled_from_the_web_process(mode_room):
    web = mode_room.web
    running = send(web, "agent:kimi", "[[fake: hang]]")["turns"][0]["turnId"]
    queued = send(web, "agent:kimi", "never prompted")["turns"][0]["turnId"]
    wait_started(web, running)

    cancel(mode_room.webs[-1], queued)  # the other web process, in split mode
    cancel(mode_room.webs[-1], running)

    assert wait_terminal(web, queued, timeout=TURN_DEADLINE)["type"] == "turn.cancelled"
    assert wait_terminal(web, running, timeout=TURN_DEADLINE)["type"] == "turn.cancelled"
    assert not any("never prompted" in str(p) for p in prompts_sent(mode_room.web, "kimi"))


def test_killing_the_agents_runtime_mid_turn_interrupts_that_turn_and_runs_the_queue_after(mode_room):
    web = mode_room.web
    running = send(web, "agent:hermes", "[[fake: hang]]")["turns"][0]["turnId"]
    waiting = send(web, "agent:hermes", "after the kill")["turns"][0]["turnId"]
    wait_started(web, running)

    mode_room.kill_agents_runtime()  # SIGKILL; the standby (split) or a restarted server takes over

    terminal = wait_terminal(web, running, timeout=TURN_DEADLINE)
    assert terminal["type"] == "turn.interrupted"
    assert wait_terminal(web, waiting, timeout=TURN_DEADLINE)["type"] == "turn.completed"
    hang_prompts = [p for p in prompts_sent(web, "hermes") if "[[fake: hang]]" in str(p)]
    assert len(hang_prompts) == 1  # never sent twice
    assert sum("after the kill" in str(p) for p in prompts_sent(web, "hermes")) == 1


def test_health_names_the_process_that_owns_the_agents_and_since_when(mode_room):
    worker = mode_room.web.get("/api/health").json()["worker"]
    assert worker["mode"] == mode_room.mode
    assert worker["owner"]["mode"] == ("embedded" if mode_room.mode == "embedded" else "worker")
    assert worker["owner"]["since"]
    assert f"agents' worker: {worker['owner']['workerId']} " in doctor(mode_room.web)
    if mode_room.mode == "split":
        assert worker["owner"]["pid"] == mode_room.workers[0].pid
        assert [s["pid"] for s in worker["standbys"]] == [w.pid for w in mode_room.workers[1:]]

    def both_ready():
        agents = {a["actorId"]: a["status"] for a in mode_room.webs[-1].get("/api/health").json()["agents"]}
        return agents == {"agent:kimi": "ready", "agent:hermes": "ready"}

    wait_until(both_ready, timeout=TURN_DEADLINE, message="health to show both agents ready")


def test_an_mcp_ask_lands_on_a_web_process_other_than_the_one_the_user_posted_to(mode_room):
    posted_to = mode_room.webs[-1]  # the agents' MCP URL is the first web process's (groupx.json's port)
    with SseClient(
        posted_to.base_url, after_seq=posted_to.get("/api/bootstrap").json()["room"]["throughSeq"]
    ) as stream:
        accepted = send(posted_to, "agent:kimi", "[[fake: mcp-ask to=agent:hermes text=ready-to-ship?]]")
        terminal = wait_terminal(posted_to, accepted["turns"][0]["turnId"], timeout=TURN_DEADLINE)
        stream.wait_for(lambda e: e["eventId"] == terminal["eventId"], timeout=TURN_DEADLINE)
        messages = [
            (e["actor"]["actorId"], e["body"]["content"]) for e in stream.durable if e["type"] == "message.created"
        ]

    assert terminal["type"] == "turn.completed"
    assert messages[1] == ("agent:kimi", "ready-to-ship?")
    assert messages[2] == ("agent:hermes", "echo: ready-to-ship?")
    assert messages[3][0] == "agent:kimi" and "mcp:ask:ok:" in messages[3][1]


def test_every_stream_of_the_room_gets_every_seq_once_and_in_order_whichever_web_process_serves_it(mode_room):
    first, last = mode_room.webs[0], mode_room.webs[-1]
    head = first.get("/api/bootstrap").json()["room"]["throughSeq"]
    with SseClient(first.base_url, after_seq=head) as one, SseClient(last.base_url, after_seq=head) as two:
        turn_ids = [send(web, "@all", f"round {n}")["turns"][0]["turnId"] for n, web in enumerate([first, last] * 3)]
        for turn_id in turn_ids:
            wait_terminal(first, turn_id, timeout=TURN_DEADLINE)
        end = first.get("/api/bootstrap").json()["room"]["throughSeq"]
        for stream in (one, two):
            stream.wait_for(lambda e: e.get("seq") == end, timeout=TURN_DEADLINE, message=f"seq {end}")
        expected = list(range(head + 1, end + 1))
        assert [e["seq"] for e in one.durable if e["seq"] <= end] == expected
        assert [e["seq"] for e in two.durable if e["seq"] <= end] == expected


def test_a_redis_restarted_mid_run_loses_no_durable_event_and_streaming_resumes(mode_room, request):
    if mode_room.mode == "embedded":
        pytest.skip("the embedded default has no Redis")
    redis_server = request.getfixturevalue("redis_server")
    web = mode_room.webs[-1]
    head = web.get("/api/bootstrap").json()["room"]["throughSeq"]
    with SseClient(web.base_url, after_seq=head) as stream:
        before = send(web, "@all", "before the restart")["turns"]
        redis_server.restart()
        after = send(web, "@all", "right after the restart")["turns"]
        for turn in before + after:
            wait_terminal(web, turn["turnId"], timeout=TURN_DEADLINE)

        streamed: list[str] = []

        def a_turn_streams_again():
            # Deltas are transient (D43): those sent while a process was still reconnecting are
            # gone by design. Streaming has resumed once a new Turn's deltas reach the stream.
            streamed.append(send(web, "agent:kimi", "[[fake: stream n=3 delay_ms=5]]")["turns"][0]["turnId"])
            wait_terminal(web, streamed[-1], timeout=TURN_DEADLINE)
            return any(e["type"] == "turn.content.delta" and e["body"]["turnId"] in streamed for e in stream.transient)

        wait_until(a_turn_streams_again, timeout=TURN_DEADLINE, interval=0.2, message="deltas after the restart")
        end = web.get("/api/bootstrap").json()["room"]["throughSeq"]
        stream.wait_for(lambda e: e.get("seq") == end, timeout=TURN_DEADLINE, message=f"seq {end}")
        assert [e["seq"] for e in stream.durable if e["seq"] <= end] == list(range(head + 1, end + 1))

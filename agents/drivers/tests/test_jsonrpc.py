"""JsonRpcClient against a scripted peer process (see helpers.PEER)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from agents.drivers.base import PROTOCOL_INVALID_MESSAGE
from agents.drivers.jsonrpc import (
    ConnectionLost,
    InboundRequest,
    JsonRpcClient,
    JsonRpcError,
    ProcessExited,
    ProtocolViolation,
    RequestTimeout,
)
from agents.drivers.process import JsonLineProcess

from .helpers import PEER, eventually, read_log, script

H = {"jsonrpc": "2.0"}


class Peer:
    def __init__(self, tmp_path, plan: list[dict[str, Any]]):
        self.argv = [*script(tmp_path, PEER, "peer.py"), json.dumps(plan), str(tmp_path / "peer.log")]
        self.log_path = tmp_path / "peer.log"
        self.client: JsonRpcClient | None = None

    @property
    def received(self) -> list[dict]:
        return read_log(self.log_path)

    async def connect(self, dialect="acp", prefix="kimi:", **handlers) -> JsonRpcClient:
        proc = await JsonLineProcess.spawn(self.argv)
        self.client = JsonRpcClient(proc, dialect=dialect, id_prefix=prefix, **handlers)
        self.client.start()
        return self.client


@pytest.fixture
async def peer_factory(tmp_path):
    peers: list[Peer] = []

    def make(plan: list[dict[str, Any]]) -> Peer:
        peers.append(Peer(tmp_path, plan))
        return peers[-1]

    yield make
    for peer in peers:
        if peer.client is not None:
            peer.client.mark_closing()
            await peer.client.process.close(close_ms=1000)


PeerFactory = Callable[[list[dict[str, Any]]], Peer]


async def test_it_matches_results_to_string_ids_with_the_agent_prefix(peer_factory: PeerFactory):
    peer = peer_factory(
        [
            {"read": 2},
            {"send": {**H, "id": "kimi:2", "result": {"n": 2}}},
            {"send": {**H, "id": "kimi:1", "result": {"n": 1}}},
        ]
    )
    client = await peer.connect()
    first = await client.send_request("initialize", {"protocolVersion": 1})
    second = await client.send_request("session/new", {"cwd": "/"})
    assert await second == {"n": 2}
    assert await first == {"n": 1}
    assert peer.received == [
        {"jsonrpc": "2.0", "id": "kimi:1", "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": "kimi:2", "method": "session/new", "params": {"cwd": "/"}},
    ]


async def test_the_codex_dialect_leaves_the_header_out_and_accepts_frames_without_it(peer_factory):
    peer = peer_factory([{"read": 1}, {"send": {"id": "$id", "result": {}}}, {"read": 1}])
    client = await peer.connect(dialect="codex", prefix="groupx-")
    assert await client.request("initialize", {}, timeout=5) == {}
    await client.notify("initialized")
    await eventually(lambda: len(peer.received) == 2, what="two frames at the peer")
    assert peer.received == [{"id": "groupx-1", "method": "initialize", "params": {}}, {"method": "initialized"}]


async def test_the_codex_dialect_still_rejects_a_wrong_header(peer_factory):
    peer = peer_factory([{"read": 1}, {"send": {"jsonrpc": "1.0", "id": "$id", "result": {}}}])
    client = await peer.connect(dialect="codex", prefix="groupx-")
    with pytest.raises(ProtocolViolation, match="wrong jsonrpc header"):
        await client.request("initialize", {}, timeout=5)


async def test_an_error_response_raises_with_code_message_and_data(peer_factory):
    error = {"code": -32000, "message": "Authentication required", "data": {"policyBlocked": True}}
    peer = peer_factory([{"read": 1}, {"send": {**H, "id": "$id", "error": error}}])
    client = await peer.connect()
    with pytest.raises(JsonRpcError) as caught:
        await client.request("session/new", {}, timeout=5)
    assert (caught.value.code, caught.value.message, caught.value.data) == (
        -32000,
        "Authentication required",
        {"policyBlocked": True},
    )


async def test_a_request_times_out_and_its_late_response_is_only_logged(peer_factory):
    peer = peer_factory(
        [
            {"read": 2},
            {"send": {**H, "id": "kimi:1", "result": "late"}},
            {"send": {**H, "id": "kimi:2", "result": "second"}},
        ]
    )
    client = await peer.connect()
    with pytest.raises(RequestTimeout):
        await client.request("slow", timeout=0.05)
    assert await client.request("fast", timeout=5) == "second"
    assert client.lost is None


@pytest.mark.parametrize("never_sent", ["kimi:7", 99, "codex:1", "kimi:01", "kimi:1-never-sent"])
async def test_a_response_to_an_id_never_sent_is_fatal_for_every_pending_request(peer_factory, never_sent):
    # D23: the CLI answered something it was never asked; what it owes us is not coming.
    peer = peer_factory([{"read": 1}, {"send": {**H, "id": never_sent, "result": "stolen"}}])
    client = await peer.connect()
    pending = await client.send_request("session/prompt")
    with pytest.raises(ProtocolViolation, match="never sent") as caught:
        await pending
    assert caught.value.code == PROTOCOL_INVALID_MESSAGE
    assert isinstance(client.lost, ProtocolViolation)


async def test_a_late_response_to_a_forgotten_request_stays_harmless_however_many_came_after(peer_factory):
    peer = peer_factory(
        [
            {"read": 1},
            {"read": 300},
            {"send": {**H, "id": "kimi:1", "result": "very late"}},
            {"read": 1},
            {"send": {**H, "id": "$id", "result": "last"}},
        ]
    )
    client = await peer.connect()
    first = await client.send_request("first")
    first.forget()
    for _ in range(300):  # more ids than any bounded memory of recent ids would keep
        await client.notify("noise")
    assert await client.request("last", timeout=5) == "last"
    assert client.lost is None


async def test_an_acp_message_without_the_header_is_fatal_for_every_pending_request(peer_factory):
    peer = peer_factory([{"read": 2}, {"send": {"method": "session/update", "params": {}}}])
    client = await peer.connect()
    first = await client.send_request("a")
    second = await client.send_request("b")
    for pending in (first, second):
        with pytest.raises(ProtocolViolation) as caught:
            await pending
        assert caught.value.code == PROTOCOL_INVALID_MESSAGE
    with pytest.raises(ProtocolViolation):
        await client.request("c", timeout=5)  # later calls fail at once
    with pytest.raises(ProtocolViolation):
        await client.notify("d")


@pytest.mark.parametrize(
    "garbage",
    [
        {"raw": "this is not json\n"},
        {"raw": "[1, 2]\n"},
        {"raw": '{"jsonrpc":"2.0","id":"kimi:1","result":{}'},  # then EOF inside the line
        {"send": {**H, "result": {}}},  # result without an id
        {"send": {**H, "id": "kimi:1", "result": {}, "error": {"code": 1, "message": "x"}}},
        {"send": {**H, "id": "kimi:1"}},
        {"send": {**H, "id": {"obj": 1}, "method": "session/request_permission"}},
        {"send": {**H, "id": None, "error": {"code": -32700, "message": "Parse error"}}},
        {"send": {**H, "id": "kimi:1", "error": "not an object"}},
        {"send": {**H, "method": 7}},
    ],
)
async def test_garbage_on_the_wire_fails_the_connection_as_invalid_message(peer_factory, garbage):
    peer = peer_factory([{"read": 1}, garbage, {"exit": 0}])
    lost: list[ConnectionLost] = []
    client = await peer.connect(on_lost=lost.append)
    with pytest.raises(ProtocolViolation) as caught:
        await client.request("session/prompt", {}, timeout=5)
    assert caught.value.code == PROTOCOL_INVALID_MESSAGE
    assert lost == [caught.value]


async def test_a_process_exit_fails_pending_requests_distinguishably(peer_factory):
    peer = peer_factory([{"read": 1}, {"exit": 7}])
    client = await peer.connect()
    with pytest.raises(ProcessExited) as caught:
        await client.request("session/prompt", {}, timeout=5)
    assert caught.value.returncode == 7
    assert caught.value.code == PROTOCOL_INVALID_MESSAGE  # the one code every driver gives an exit (D38)
    assert not caught.value.expected
    assert "exit code 7" in str(caught.value)


async def test_frames_written_just_before_an_exit_are_still_delivered(peer_factory):
    peer = peer_factory(
        [
            {"read": 1},
            {"send": {**H, "method": "session/update", "params": {"n": 1}}},
            {"send": {**H, "id": "$id", "result": {"stopReason": "end_turn"}}},
            {"exit": 3},
        ]
    )
    seen: list[Any] = []
    client = await peer.connect(on_notification=lambda method, params: seen.append(params))
    assert await client.request("session/prompt", {}, timeout=5) == {"stopReason": "end_turn"}
    assert seen == [{"n": 1}]
    assert isinstance(await asyncio.wait_for(client.wait_lost(), 5), ProcessExited)


async def test_notifications_reach_the_handler_in_wire_order(peer_factory):
    peer = peer_factory(
        [
            {"read": 1},
            *[{"send": {**H, "method": "session/update", "params": {"n": n}}} for n in range(5)],
            {"send": {**H, "method": "_x.ai/mcp/servers_updated"}},
            {"send": {**H, "id": "$id", "result": {}}},
        ]
    )
    seen: list[tuple[str, Any]] = []
    client = await peer.connect(on_notification=lambda method, params: seen.append((method, params)))
    await client.request("session/prompt", {}, timeout=5)
    assert seen == [*[("session/update", {"n": n}) for n in range(5)], ("_x.ai/mcp/servers_updated", None)]


async def test_server_requests_are_answered_with_the_handlers_result_or_error(peer_factory):
    peer = peer_factory(
        [
            {"send": {**H, "id": 0, "method": "session/request_permission", "params": {"options": []}}},
            {"send": {**H, "id": "s-1", "method": "fs/read_text_file", "params": {"path": "/etc/passwd"}}},
            {"send": {**H, "id": 2, "method": "explode"}},
            {"read": 3},
        ]
    )

    def handler(request: InboundRequest) -> Any:
        if request.method == "session/request_permission":
            return {"outcome": {"outcome": "cancelled"}}
        if request.method == "explode":
            raise RuntimeError("handler bug")
        raise JsonRpcError(-32601, "Method not found", {"method": request.method})

    await peer.connect(on_request=handler)
    await eventually(lambda: len(peer.received) == 3, what="three replies")
    assert peer.received == [
        {"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "cancelled"}}},
        {
            "jsonrpc": "2.0",
            "id": "s-1",
            "error": {"code": -32601, "message": "Method not found", "data": {"method": "fs/read_text_file"}},
        },
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32603, "message": "Internal error"}},
    ]


async def test_a_server_request_without_a_handler_gets_method_not_found(peer_factory):
    peer = peer_factory([{"send": {**H, "id": 5, "method": "terminal/create"}}, {"read": 1}])
    await peer.connect()
    await eventually(lambda: len(peer.received) == 1, what="the reply")
    assert peer.received[0]["error"]["code"] == -32601
    assert peer.received[0]["id"] == 5


async def test_a_repeated_active_request_id_gets_invalid_request(peer_factory):
    ask = {**H, "id": 41, "method": "session/request_permission", "params": {}}
    peer = peer_factory([{"send": ask}, {"send": ask}, {"read": 2}])
    release = asyncio.Event()

    async def slow_answer() -> Any:
        await release.wait()
        return {"outcome": {"outcome": "cancelled"}}

    await peer.connect(on_request=lambda request: slow_answer())
    await eventually(lambda: len(peer.received) == 1, what="the duplicate's rejection")
    release.set()
    await eventually(lambda: len(peer.received) == 2, what="the original's reply")
    duplicate, original = peer.received
    assert duplicate["id"] == 41 and duplicate["error"]["code"] == -32600
    assert original == {"jsonrpc": "2.0", "id": 41, "result": {"outcome": {"outcome": "cancelled"}}}


async def test_a_handler_can_reply_itself_and_then_send_more_in_order(peer_factory):
    peer = peer_factory([{"send": {**H, "id": 9, "method": "session/request_permission"}}, {"read": 2}])
    client: JsonRpcClient | None = None

    def handler(request: InboundRequest) -> Any:
        async def settle() -> None:
            await request.respond({"outcome": {"outcome": "cancelled"}})
            assert client is not None
            await client.notify("session/cancel", {"sessionId": "s"})

        return settle()

    client = await peer.connect(on_request=handler)
    await eventually(lambda: len(peer.received) == 2, what="reply and cancel")
    assert [frame.get("id", frame.get("method")) for frame in peer.received] == [9, "session/cancel"]


async def test_a_closing_exit_is_marked_expected(peer_factory):
    peer = peer_factory([{"read": 1}])
    client = await peer.connect()
    pending = await client.send_request("session/prompt", {})
    client.mark_closing()
    await client.process.close(close_ms=1000)
    with pytest.raises(ProcessExited) as caught:
        await pending
    assert caught.value.expected

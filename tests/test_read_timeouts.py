"""A request must arrive in time: headers, then body (docs/DECISIONS.md D103). A client that drips
its bytes (slowloris) is answered 408 and cut off, on a real daphne server over loopback; an event
stream, whose request is whole at once, stays open. The server's deadlines are shortened through
its environment; the test waits for the server to close the socket, it never sleeps."""

from __future__ import annotations

import socket
import time

import pytest

from tests.server import GroupXServer, hanging_agent
from tests.sse import SseClient

DEADLINE_MS = 600


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("timeouts")
    room = GroupXServer(
        workdir,
        {"agents": {"sleeper": hanging_agent(workdir)}, "timeouts": {"handshakeMs": 600000, "closeMs": 300}},
        env={"GROUPX_HEADERS_TIMEOUT_MS": str(DEADLINE_MS), "GROUPX_BODY_TIMEOUT_MS": str(DEADLINE_MS)},
    )
    room.start()
    yield room
    room.stop()


def drip_until_closed(server, first: bytes, drip: bytes, *, budget: float = 20.0) -> bytes:
    """Send ``first``, then one byte of ``drip`` at a time while the server keeps the connection;
    returns what the server answered before it closed. Each byte goes out only once the previous
    one met a quiet socket (a short recv timeout), so the client really is slow."""
    received = b""
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(first)
        sock.settimeout(0.1)
        deadline = time.monotonic() + budget
        for byte in drip:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                chunk = None
            if chunk == b"":
                return received
            if chunk:
                received += chunk
                continue
            if time.monotonic() > deadline:
                raise AssertionError("the server kept a dripping client past the budget")
            try:
                sock.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                return received
        raise AssertionError("the whole request was sent before the server closed the connection")


def test_headers_that_drip_in_are_answered_408_and_the_connection_is_closed(server):
    answer = drip_until_closed(server, b"GET /api/health HTTP/1.1\r\n", b"X-Slow: " + b"a" * 5000 + b"\r\n\r\n")

    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b'"code": "INVALID_ENVELOPE"' in answer and b"headers" in answer


def test_a_body_that_drips_in_is_answered_408_and_the_connection_is_closed(server):
    body = b'{"clientCommandId":"slow","to":["agent:sleeper"],"content":"' + b"a" * 5000 + b'"}'
    head = (
        b"POST /api/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
    )

    answer = drip_until_closed(server, head, body)

    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"body" in answer
    assert not [e for e in server.events() if e["type"] == "message.created"]


def test_an_event_stream_outlives_the_read_deadlines(server):
    with SseClient(server.base_url, after_seq=0) as stream:
        opened = time.monotonic()
        while time.monotonic() - opened < 3 * DEADLINE_MS / 1000:  # the stream itself is the clock
            assert not stream.closed.wait(0.1)
        assert stream.status == 200
    assert server.get("/api/health").status_code in (200, 503)

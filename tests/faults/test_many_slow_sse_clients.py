"""Two hundred event streams, slow readers among them, while messages are posted (D21, D22, D37).

Every stream must end with every durable seq exactly once and in order; readers that hold their
reads back must not hold back anyone else; and the server's peak resident memory rises by less
than the stated bound, although each paused reader is owed far more than its socket buffers
hold (the server stops writing to it instead of buffering: ``groupx_site/backpressure.py``).
Slow readers are released by a condition (every other reader has the whole log), never a timer.
"""

from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.faults.memory_watch import MIB, MemoryWatch
from tests.faults.raw_sse import StreamReader
from tests.test_event_stream_fanout import insert_rows

READERS = 200
# Readers that read nothing until released: some from the start of a 12 MB log, three times what
# the kernel buffers for one socket (4 MiB on loopback), the others from its head.
PAUSED_FROM_THE_START = 20
PAUSED_AT_THE_HEAD = 20
TRICKLING = 40  # a 4 KiB receive buffer, read 512 bytes at a time
OLD_ROWS, OLD_ROW_CHARACTERS = 6_000, 2_000
POSTS = 100
CONTENT_CHARACTERS = 8_000  # each post owes every reader ~8.5 KB: ~850 KB per reader in all
# What the server's peak may rise by while 200 streams are open and 20 owe it 13 MB each (D37).
MEMORY_BOUND_BYTES = 48 * MIB
DEADLINE_SECONDS = 180


@pytest.fixture
def server(make_server):
    return make_server(limits={"queuePerAgent": 10_000})


async def post_messages(base_url: str, count: int) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        for i in range(count):
            body = {
                "clientCommandId": str(uuid.uuid4()),
                "to": ["agent:sleeper"],
                "content": f"{i:04d} " + "m" * CONTENT_CHARACTERS,
            }
            response = await client.post("/api/messages", json=body)
            assert response.status_code == 202, response.text


def head_of(server) -> int:
    return server.get("/api/bootstrap").json()["room"]["throughSeq"]


async def within_deadline(awaitable, what: str):
    try:
        return await asyncio.wait_for(awaitable, DEADLINE_SECONDS)
    except TimeoutError:
        raise AssertionError(f"timed out after {DEADLINE_SECONDS}s waiting for {what}") from None


def test_two_hundred_streams_with_slow_readers_each_get_every_seq_once_in_order_within_the_memory_bound(server):
    # A loop of its own on a thread of its own: an earlier test in this worker (Playwright's sync
    # API) may have left an event loop running on the main thread, where asyncio.run refuses to.
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, post_while_two_hundred_read(server)).result()


async def post_while_two_hundred_read(server) -> None:
    insert_rows(server, OLD_ROWS, body_size=OLD_ROW_CHARACTERS)
    await post_messages(server.base_url, 1)  # the ordinary first-time costs, before the watch
    start = head_of(server)
    memory = MemoryWatch(server.proc.pid)
    release = asyncio.Event()
    paused = [StreamReader(server.port, 0, receive_buffer=4096, hold=release) for _ in range(PAUSED_FROM_THE_START)]
    paused += [StreamReader(server.port, start, receive_buffer=4096, hold=release) for _ in range(PAUSED_AT_THE_HEAD)]
    trickling = [StreamReader(server.port, start, receive_buffer=4096, piece=512) for _ in range(TRICKLING)]
    others = [StreamReader(server.port, start) for _ in range(READERS - len(paused) - TRICKLING)]
    readers = paused + trickling + others
    running = [asyncio.create_task(reader.run()) for reader in readers]
    try:
        await within_deadline(asyncio.gather(*(r.headers_read.wait() for r in readers)), "every stream's headers")
        assert {r.status for r in readers} == {200}

        await post_messages(server.base_url, POSTS)
        head = await asyncio.to_thread(head_of, server)
        assert head == start + 2 * POSTS  # each post: its message.created and the sleeper's turn.queued
        # Everyone who reads gets the whole log while the paused readers still hold theirs back.
        await within_deadline(asyncio.gather(*(r.reached(head) for r in trickling + others)), "the reading streams")
        rise_while_paused = memory.rise()
        release.set()
        await within_deadline(asyncio.gather(*(r.reached(head) for r in paused)), "the released streams")
        print(
            memory.report(f"{READERS} streams, {len(paused)} paused, {TRICKLING} trickling, up to seq {head}"),
            f"(+{rise_while_paused / MIB:.1f} MiB while paused)",
        )

        assert [r.seqs == list(range(r.after_seq + 1, head + 1)) for r in readers] == [True] * READERS
        assert rise_while_paused < MEMORY_BOUND_BYTES
        assert memory.rise() < MEMORY_BOUND_BYTES
    finally:
        release.set()
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)

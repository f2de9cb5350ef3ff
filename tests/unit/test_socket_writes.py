"""``groupx_site/speedups/socket_writes.py``: twisted's socket writes without epoll_ctl while the socket has room (D73).

Installing it needs twisted's asyncio reactor, which is process-wide, so each behaviour is checked
in a child Python of its own, over a real loopback TCP connection."""

from __future__ import annotations

import hashlib
import inspect
import json
import subprocess
import sys
import textwrap

from twisted.internet import abstract, asyncioreactor, tcp

# sha256 of the source of each twisted function ``socket_writes`` relies on (twisted 26.10.0):
# how a descriptor asks for ``doWrite`` and what ``doWrite`` does with its buffer, producers and a
# pending close; how the asyncio reactor runs ``doWrite`` and watches a writer; which class a TCP
# port builds its connections from.
RELIED_ON = {
    abstract.FileDescriptor.doWrite: "a986d7b1b1054e431495d50528824683fa7ebb1ffcf3e57333bdd6f37f603141",
    abstract.FileDescriptor.write: "3e46c97fc173bc7e227065420969c27688f24903c27dcc165b63166a605d688c",
    abstract.FileDescriptor.writeSequence: "1606f230d318191a6e57f7c2eb9768d81752a4c20c6122a8fa8c18a837afbb92",
    abstract.FileDescriptor.startWriting: "8e2f899b7d73a0f5d3e13d50fb54bfbe2250ceea610dc532b3fccee783f47e2e",
    abstract.FileDescriptor.stopWriting: "3a6c0cff8fad8201f1a14e97a9759edb76acea8d391a046ce2e1230fce92b172",
    abstract.FileDescriptor.loseConnection: "e13b8468f05208ae2f7bc13b69db4887259abc836d18d519964539a2d5ec9b24",
    abstract.FileDescriptor.loseWriteConnection: "cdbe2b064c75ec79ce254e375e40703ed4f6b9965f01c616f5e78d3c70d6f7a2",
    abstract.FileDescriptor._maybePauseProducer: "529bd8438e1a279f2d549ab9de2a07489270e1e902ee3a08426fda8822073438",
    asyncioreactor.AsyncioSelectorReactor._readOrWrite: "df202ad63297273dbc7a986c8abdd971773ebfd02e43804d98a89ebde3d21871",
    asyncioreactor.AsyncioSelectorReactor.addWriter: "dd13a0098bb09d365c0a72961b99516ba269d8edbc8d565cc5f508faa0d3fe12",
    tcp.Port.doRead: "d240fc123090ee235be9f4e6b99a11e38d3dceab45d1708a47016d420e179ad9",
}

# A TCP server under the asyncio reactor with ``socket_writes`` installed (argv[1] == "installed")
# and a client in a thread. The server answers a connection in one callback as an HTTP response is
# written (status line, headers, a body through ``writeSequence``; argv[2] bytes of it) with a
# streaming producer registered as daphne's event stream registers one (``groupx_site/backpressure.py``), then
# closes (a paused producer: once it is resumed). The client reads only once the producer is paused
# when the body cannot fit the kernel's buffers. Prints what the client received and how the server's writes went.
CHILD = textwrap.dedent("""
    import hashlib, json, socket, sys, threading
    from twisted.internet import asyncioreactor
    asyncioreactor.install()
    from twisted.internet import protocol, reactor
    from groupx_site.speedups import socket_writes

    if sys.argv[1] == "installed":
        socket_writes.install()
    size = int(sys.argv[2])
    watched, producer_calls, paused = [], [], threading.Event()
    add_writer = reactor.addWriter
    reactor.addWriter = lambda writer: (watched.append(type(writer).__name__), add_writer(writer))

    class Producer:
        def pauseProducing(self):
            producer_calls.append("pause")
            paused.set()
        def resumeProducing(self):  # the client read it all: the answer ends
            producer_calls.append("resume")
            self.transport.unregisterProducer()
            self.transport.loseConnection()
        def stopProducing(self):
            producer_calls.append("stop")

    class Answer(protocol.Protocol):
        def connectionMade(self):
            producer = Producer()
            producer.transport = self.transport
            self.transport.registerProducer(producer, True)
            self.transport.write(b"HTTP/1.1 200 OK\\r\\n")
            self.transport.writeSequence([b"Content-Length: ", str(size).encode(), b"\\r\\n\\r\\n"])
            self.transport.writeSequence([bytes([n % 251]) * 65536 for n in range(size // 65536)])
            self.transport.write(b"x" * (size % 65536))
            if not paused.is_set():  # all of it fits the transport's buffer: no back-pressure
                self.transport.unregisterProducer()
                self.transport.loseConnection()

    port = reactor.listenTCP(0, protocol.Factory.forProtocol(Answer), interface="127.0.0.1")
    received = {}

    def client():
        with socket.create_connection(("127.0.0.1", port.getHost().port)) as connection:
            if size > 32 * 1024 * 1024:
                paused.wait(60)
            chunks = []
            while chunk := connection.recv(1 << 20):
                chunks.append(chunk)
        data = b"".join(chunks)
        received.update(length=len(data), sha256=hashlib.sha256(data).hexdigest())
        reactor.callFromThread(reactor.stop)

    reactor.callWhenRunning(lambda: threading.Thread(target=client, daemon=True).start())
    reactor.run()
    transport = type(port).transport.__name__
    print(json.dumps({"received": received, "watched": watched, "producer": producer_calls, "transport": transport}))
""")


def served(installed: bool, size: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, "installed" if installed else "twisted", str(size)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_the_twisted_code_socket_writes_relies_on_is_the_code_it_was_written_against():
    changed = [
        function.__qualname__
        for function, digest in RELIED_ON.items()
        if hashlib.sha256(inspect.getsource(function).encode()).hexdigest() != digest
    ]
    assert changed == [], f'twisted changed {changed}: see docs/UPGRADING.md "twisted TCP writes"'


def test_a_small_answer_arrives_whole_without_the_reactor_watching_the_socket():
    twisted, installed = served(False, 5000), served(True, 5000)
    assert installed["transport"] == "SoonWritingServer"
    assert installed["received"] == twisted["received"]
    assert set(twisted["watched"]) == {"Server"}  # twisted's path: add_writer and remove_writer, two epoll_ctl
    assert installed["watched"] == []


def test_a_body_larger_than_the_kernel_takes_pauses_the_producer_and_arrives_whole_once_read():
    size = 64 * 1024 * 1024 + 123
    twisted, installed = served(False, size), served(True, size)
    assert installed["received"] == twisted["received"]
    assert installed["received"]["length"] > size
    assert set(installed["watched"]) == {"SoonWritingServer"}  # back on twisted's path until drained
    assert installed["producer"] == twisted["producer"]
    assert installed["producer"][0] == "pause" and installed["producer"][-1] == "resume"

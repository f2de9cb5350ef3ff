from __future__ import annotations

import itertools

import pytest

from tests.server import GroupXServer, hanging_agent

_ids = itertools.count()


@pytest.fixture
def make_server(tmp_path_factory):
    """Start a real server with a given config; every server is stopped at the end of the test."""
    servers: list[GroupXServer] = []

    def factory(agents: dict | None = None, *, workdir=None, **config) -> GroupXServer:
        workdir = workdir or tmp_path_factory.mktemp(f"groupx{next(_ids)}")
        document = {
            "server": {"host": "127.0.0.1", "port": 4310},
            "timeouts": {"handshakeMs": 600000, "closeMs": 300},
            **config,
        }
        document["agents"] = agents if agents is not None else {"sleeper": hanging_agent(workdir)}
        server = GroupXServer(workdir, document)
        servers.append(server)
        return server.start()

    yield factory
    for server in servers:
        server.stop()


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    """A shared server for read-mostly tests: three agents whose Turns stay queued."""
    workdir = tmp_path_factory.mktemp("room")
    agents = {name: hanging_agent(workdir, name) for name in ("alpha", "beta", "gamma")}
    agents["off"] = {**hanging_agent(workdir, "off"), "enabled": False}
    server = GroupXServer(workdir, {"agents": agents, "timeouts": {"handshakeMs": 600000, "closeMs": 300}})
    server.start()
    yield server
    server.stop()

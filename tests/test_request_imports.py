"""Once the room is ready, answering a refusal imports no module (D78).

A module imported while the room serves costs that request the import on the event loop's
thread, and under ``manage.py runserver`` it changes ``sys.modules``, so Django's autoreloader
resolves every watched path again on its next tick (~1,170 paths; ~100 ms of CPU on the
project's machine). The server runs with ``PYTHONPROFILEIMPORTTIME=1``: CPython writes one
``import time:`` line per module it imports, so the log shows any import the requests made."""

from __future__ import annotations

from tests.server import GroupXServer, hanging_agent


def _imports(log: str) -> list[str]:
    return [line for line in log.splitlines() if line.startswith("import time:")]


def test_the_refusals_of_a_busy_room_import_no_module_after_it_is_ready(tmp_path):
    server = GroupXServer(
        tmp_path,
        {
            "agents": {"alpha": hanging_agent(tmp_path, "alpha")},
            # The promise is the default's, which imports the refusal's codec with the server (D78);
            # make test-plain's plain daphne formats its access-log line with a codec it imports late.
            "server": {"host": "127.0.0.1", "port": 4310, "speedups": True},
            "limits": {"queuePerAgent": 1},
            "timeouts": {"handshakeMs": 600000, "closeMs": 300},
        },
        env={"PYTHONPROFILEIMPORTTIME": "1"},
    ).start()
    try:
        accepted = server.post("/api/messages", {"clientCommandId": "first", "to": ["agent:alpha"], "content": "a"})
        assert accepted.status_code == 202  # its Turn stays queued: the agent hangs in its handshake
        before = len(server.log())

        full = server.post("/api/messages", {"clientCommandId": "second", "to": ["agent:alpha"], "content": "b"})
        unknown = server.post("/api/messages", {"clientCommandId": "third", "to": ["agent:nobody"], "content": "c"})
        invalid = server.post("/api/messages", {"clientCommandId": "fourth", "to": [], "content": "d"})

        assert [full.status_code, unknown.status_code, invalid.status_code] == [429, 404, 400]
        assert _imports(server.log()[before:]) == []
    finally:
        server.stop()

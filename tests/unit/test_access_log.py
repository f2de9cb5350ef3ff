"""``groupx_site/speedups/access_log.py``: no twisted access-log line where daphne drops it (D70).

daphne.server installs twisted's asyncio reactor when imported, so each check runs in a child
Python of its own rather than in the test process."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import textwrap

from groupx_site.speedups import access_log

# One finished request through a factory built as daphne builds it (the name in daphne.server),
# with twisted's own channel and request: prints the lines the factory's log file received.
CHILD = textwrap.dedent("""
    import io, json, sys
    from daphne import server
    from twisted.internet.testing import StringTransport
    from twisted.web import http
    from groupx_site.speedups import access_log

    if sys.argv[2] == "installed":
        access_log.install()

    class Finished(http.Request):
        def process(self):
            self.setResponseCode(204)
            self.finish()

    class Stub:
        verbosity = int(sys.argv[1])

    factory = server.HTTPFactory(Stub())
    factory.startFactory()
    factory.logFile = lines = io.StringIO()
    channel = factory.buildProtocol(None)
    channel.requestFactory = Finished
    channel.makeConnection(StringTransport())
    channel.dataReceived(b"GET /api/health HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n")
    print(json.dumps(lines.getvalue().splitlines()))
""")


def logged_lines(verbosity: int, installed: bool) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(verbosity), "installed" if installed else "daphne"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_daphne_builds_its_http_factory_from_the_name_install_replaces():
    # When this fails, daphne builds its factory some other way: install() no longer reaches it.
    from daphne import server  # noqa: F401  (only its source is read: inspect does not run it)

    source = inspect.getsource(sys.modules["daphne.server"].Server.run)
    assert "self.http_factory = HTTPFactory(self)" in source


def test_twisted_logs_each_finished_request_through_the_factory_where_daphne_drops_it():
    # The line install() saves: without it, daphne's factory at verbosity 0 writes one per request.
    [line] = logged_lines(0, installed=False)
    assert '"GET /api/health HTTP/1.1" 204' in line


def test_no_access_log_line_is_made_at_the_verbosities_where_daphne_drops_twisteds_log():
    for verbosity in range(access_log.QUIET_UP_TO_VERBOSITY + 1):
        assert logged_lines(verbosity, installed=True) == []


def test_the_access_log_line_is_still_written_where_daphne_keeps_twisteds_log():
    [line] = logged_lines(access_log.QUIET_UP_TO_VERBOSITY + 1, installed=True)
    assert '"GET /api/health HTTP/1.1" 204' in line

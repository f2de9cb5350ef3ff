"""twisted's access-log line, formatted and written per request for nobody (D70).

twisted's ``HTTPFactory.log`` formats a Combined Log Format line for every finished request
(``combinedLogFormatter``: the client's address, the date, the escaped request line, referrer and
user agent) and writes it to ``twisted.python.log.logfile``, which turns it into a log event for
the global log publisher. At daphne's verbosity 0 or 1 (``groupx start`` runs at 0, ``manage.py
runserver`` at 1) daphne sends that publisher's events to ``lambda _: None``: the line is built,
wrapped and dropped, on the event loop's thread, for every post and every SSE stream. daphne
writes its own access log (``action_logger``, runserver's lines) from its own hooks, untouched.

``install`` makes daphne build its HTTP factory as a subclass whose ``log`` (``HTTPFactory``'s
documented, overridable method) writes the line only when daphne keeps twisted's log (verbosity 2
or more, through Python's logging). daphne builds the factory from the name ``HTTPFactory`` in
``daphne.server`` when its server runs, so this replaces that name, as ``body_limit`` replaces
daphne's request class; ``tests/unit/test_access_log.py`` fails when daphne stops building it so
or twisted stops logging through ``log``.
"""

from __future__ import annotations

QUIET_UP_TO_VERBOSITY = 1  # daphne.server.Server.run: at <= 1 twisted's log goes to nowhere


def install() -> None:
    """Make daphne's server build a ``QuietHTTPFactory`` (idempotent; before the server runs)."""
    from daphne import server

    if getattr(server.HTTPFactory, "quiet", False):
        return

    class QuietHTTPFactory(server.HTTPFactory):
        quiet = True

        def log(self, request) -> None:
            if self.server.verbosity > QUIET_UP_TO_VERBOSITY:
                super().log(request)

    server.HTTPFactory = QuietHTTPFactory

"""The 2 MiB body ceiling, enforced while the request arrives (D25; FEATURES §5).

Twisted reads a request's whole body (into memory or a temporary file) before daphne hands the
request to the application, so a check in Django's middleware came after the upload: a 200 MB
body with a true ``Content-Length`` raised the server's peak memory by 200 MB before its 413, and
a chunked body with no length reached Django's own ceiling as a 500. Here the check runs inside
daphne's request object:

- a declared ``Content-Length`` over the limit is refused when the headers end, before one byte
  of the body is read;
- a chunked body is counted as it arrives and refused as soon as it passes the limit.

The refusal is the protocol's error (413 ``MESSAGE_TOO_LARGE``, JSON, the API's security headers);
then the connection closes in a bounded, lingering way (``_refuse``): the rest of the upload is
never stored nor handed to the application. daphne has no setting for
this; its ``HTTPFactory`` builds requests from the module-level ``WebRequest``, which ``install``
replaces with the subclass below (docs/DECISIONS.md D25). The subclass also turns off twisted's
parsing of form bodies into ``request.args``, which daphne never reads (D60).
"""

from __future__ import annotations

import io
import json
import os

from groupx_site.core.bodies import MAX_BODY_BYTES

# How long a request may take to arrive (docs/DECISIONS.md D103): its headers, from its first byte,
# and then its body. A client that drips bytes (slowloris) is answered 408 and cut off; once a
# request is whole nothing is timed here, so an event stream stays open as long as it likes. The
# tests shorten both through the environment.
HEADERS_SECONDS = int(os.environ.get("GROUPX_HEADERS_TIMEOUT_MS") or 10_000) / 1000
BODY_SECONDS = int(os.environ.get("GROUPX_BODY_TIMEOUT_MS") or 30_000) / 1000

LINGER_BYTES = 8 * MAX_BODY_BYTES  # read and discarded after a refusal, at most
LINGER_SECONDS = 2.0


def error_answer(status: bytes, code: str, message: str) -> bytes:
    """A whole HTTP answer with the protocol's error body and the API's security headers."""
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    return (
        b"HTTP/1.1 " + status + b"\r\n"
        b"Content-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n"
        b"Content-Security-Policy: default-src 'self'; img-src 'self' data:; frame-ancestors 'none'\r\n"
        b"X-Content-Type-Options: nosniff\r\n"
        b"Referrer-Policy: no-referrer\r\n"
        b"Connection: close\r\n\r\n" + body
    )


REFUSAL = error_answer(b"413 Content Too Large", "MESSAGE_TOO_LARGE", "request body exceeds 2 MiB")


def install() -> None:
    """Make daphne build every request as a ``BoundedWebRequest`` and every connection as a
    ``TimedChannel`` (idempotent)."""
    from daphne import http_protocol, server

    if getattr(http_protocol.WebRequest, "bounded", False):
        return
    install_read_deadlines(server)

    class BoundedWebRequest(http_protocol.WebRequest):
        bounded = True
        refused = False
        received = 0
        drained = 0

        def __init__(self, *args, **kwargs):
            # Twisted's documented switch: daphne hands the raw body to the application and never
            # reads ``request.args``, so parsing every POST's Content-Type through the stdlib
            # ``email`` package for form fields (~3 % of a Turn's CPU) is work nobody uses (D60).
            kwargs.setdefault("parsePOSTFormSubmission", False)
            super().__init__(*args, **kwargs)

        def gotLength(self, length):  # noqa: N802 (twisted's name)
            if length is not None and length > MAX_BODY_BYTES:
                self.content = io.BytesIO()  # twisted expects one; nothing is ever written to it
                self._refuse()
                return
            super().gotLength(length)

        def handleContentChunk(self, data):  # noqa: N802
            if self.refused:
                self.drained += len(data)
                if self.drained > LINGER_BYTES:
                    self.channel.transport.abortConnection()
                return
            self.received += len(data)
            if self.received > MAX_BODY_BYTES:
                self._refuse()
                return
            super().handleContentChunk(data)

        def requestReceived(self, command, path, version):  # noqa: N802
            if not self.refused:  # a refused request never reaches the application
                super().requestReceived(command, path, version)

        def _refuse(self) -> None:
            from twisted.internet import reactor

            self.refused = True
            self.content = io.BytesIO()  # drop what was buffered so far
            transport = self.channel.transport
            transport.write(REFUSAL)
            # A lingering close: closing at once while the client is still sending makes the
            # kernel answer its next bytes with a reset, which can destroy the 413 before the
            # client reads it. So only our side closes (FIN after the answer), the rest of the
            # upload is read and thrown away, and the connection is cut when the client is done,
            # after LINGER_BYTES, or after LINGER_SECONDS, whichever comes first.
            transport.loseWriteConnection()
            self._linger = reactor.callLater(LINGER_SECONDS, transport.abortConnection)

        def connectionLost(self, reason):  # noqa: N802
            linger = getattr(self, "_linger", None)
            if linger is not None and linger.active():
                linger.cancel()
            super().connectionLost(reason)

    http_protocol.WebRequest = BoundedWebRequest


def install_read_deadlines(server) -> None:
    """daphne's ``HTTPFactory`` (the name ``daphne.server`` builds its factory from, as
    ``access_log`` also uses) with connections that time the arrival of each request."""
    from twisted.internet import reactor
    from twisted.web import http

    class TimedChannel(http.HTTPChannel):
        _deadline = None

        def dataReceived(self, data):  # noqa: N802 (twisted's names)
            # A request's first byte starts its clock. An idle connection, new or kept alive, sends
            # nothing and stays under twisted's own idle timeout, so a client that sends its next
            # request just as the idle connection closes never gets a 408 for it.
            if self._deadline is None and not self._handlingRequest:
                self._arm("headers", HEADERS_SECONDS)
            super().dataReceived(data)

        def allHeadersReceived(self):  # noqa: N802
            super().allHeadersReceived()
            self._arm("body", BODY_SECONDS)  # disarmed at once by allContentReceived when there is none

        def allContentReceived(self):  # noqa: N802
            self._disarm()
            super().allContentReceived()

        def connectionLost(self, reason):  # noqa: N802
            self._disarm()
            super().connectionLost(reason)

        def _arm(self, what: str, seconds: float) -> None:
            self._disarm()
            self._deadline = reactor.callLater(seconds, self._too_slow, what, seconds)

        def _disarm(self) -> None:
            if self._deadline is not None and self._deadline.active():
                self._deadline.cancel()
            self._deadline = None

        def _too_slow(self, what: str, seconds: float) -> None:
            self._deadline = None
            self.transport.write(
                error_answer(
                    b"408 Request Timeout",
                    "INVALID_ENVELOPE",
                    f"the request's {what} did not arrive within {seconds:g} s",
                )
            )
            self.transport.loseConnection()
            reactor.callLater(LINGER_SECONDS, self.transport.abortConnection)

    class TimedHTTPFactory(server.HTTPFactory):
        def protocol(self):
            return http._GenericHTTPChannelProtocol(TimedChannel())

    server.HTTPFactory = TimedHTTPFactory

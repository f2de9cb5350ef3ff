"""The 2 MiB body ceiling, enforced while the request arrives (issue 14; FEATURES §5).

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

from groupx_site.core.bodies import MAX_BODY_BYTES

LINGER_BYTES = 8 * MAX_BODY_BYTES  # read and discarded after a refusal, at most
LINGER_SECONDS = 2.0

REFUSAL_BODY = json.dumps({"error": {"code": "MESSAGE_TOO_LARGE", "message": "request body exceeds 2 MiB"}}).encode()
REFUSAL = (
    b"HTTP/1.1 413 Content Too Large\r\n"
    b"Content-Type: application/json\r\n"
    b"Content-Length: " + str(len(REFUSAL_BODY)).encode() + b"\r\n"
    b"Content-Security-Policy: default-src 'self'; img-src 'self' data:; frame-ancestors 'none'\r\n"
    b"X-Content-Type-Options: nosniff\r\n"
    b"Referrer-Policy: no-referrer\r\n"
    b"Connection: close\r\n\r\n" + REFUSAL_BODY
)


def install() -> None:
    """Make daphne build every request as a ``BoundedWebRequest`` (idempotent)."""
    from daphne import http_protocol

    if getattr(http_protocol.WebRequest, "bounded", False):
        return

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

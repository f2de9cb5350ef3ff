"""The standalone setup wizard (FEATURES §2.3): a temporary loopback server on a random port.

``groupx start`` / ``groupx init`` run it when there is no ``groupx.json`` (or always, for init).
It serves the same page and setup API as a running GroupX, plus ``GET /api/setup/launch``. After
the one save, the command starts the real runtime on the configured port and reports here; the
page polls ``/api/setup/launch`` and goes to the room once it says ``ready``, and this server
closes once the page has seen the outcome (or after a short timeout when nobody is looking).

It is a stdlib server in a thread, not Django: Django's settings read ``groupx.json`` at import,
and that file is exactly what this server exists to write. The same guards as the real server
apply: loopback ``Host`` only (DNS rebinding), JSON writes from no foreign ``Origin``, self-only CSP.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from groupx_site.bodies import MAX_BODY_BYTES, parse_json_body
from groupx_site.errors import GroupXError
from setup_wizard import actions

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "templates" / "setup_wizard" / "setup.html"
STATIC = {
    "/static/setup_wizard/setup.js": ("text/javascript; charset=utf-8", REPO / "static" / "setup_wizard" / "setup.js"),
    "/static/setup_wizard/setup.css": ("text/css; charset=utf-8", REPO / "static" / "setup_wizard" / "setup.css"),
}
READY_CLOSE_SECONDS = 5.0
FAILED_CLOSE_SECONDS = 2.0
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class Wizard:
    """The wizard's state: one save, then the launch outcome the page polls for."""

    def __init__(self, config_path: Path):
        self.config_path = config_path
        self.saved = threading.Event()
        self.seen = threading.Event()  # the page fetched a final launch state
        self._lock = threading.Lock()
        self._launch: dict[str, Any] = {"status": "waiting"}
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="groupx-wizard", daemon=True)
        self._closed = threading.Event()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> Wizard:
        self._thread.start()
        return self

    def save(self, body: Any) -> dict[str, Any]:
        with self._lock:
            if self.saved.is_set():  # the runtime is already being started from the first save
                raise GroupXError("CLIENT_COMMAND_CONFLICT", "this setup was already saved; the room is starting")
            result = actions.save(self.config_path, body, restart_required=False)
            self.saved.set()
            return result

    def launch_state(self) -> dict[str, Any]:
        with self._lock:
            state = dict(self._launch)
        if state["status"] != "waiting":
            self.seen.set()
        return state

    def report_ready(self, origin: str) -> None:
        with self._lock:
            self._launch = {"status": "ready", "origin": origin}
        self.close_after(READY_CLOSE_SECONDS)

    def report_failed(self, message: str) -> None:
        with self._lock:
            self._launch = {"status": "failed", "message": message}
        self.close_after(FAILED_CLOSE_SECONDS)

    def close_after(self, seconds: float) -> None:
        """Close once the page has seen the outcome, or after ``seconds`` (nobody may be looking)."""

        def closer() -> None:
            self.seen.wait(seconds)
            self.close()

        threading.Thread(target=closer, name="groupx-wizard-close", daemon=True).start()

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self.httpd.shutdown()
            self.httpd.server_close()

    def wait_closed(self, timeout: float) -> None:
        self._closed.wait(timeout)


def _handler_for(wizard: Wizard) -> type[BaseHTTPRequestHandler]:
    class Handler(WizardHandler):
        pass

    Handler.wizard = wizard
    return Handler


class WizardHandler(BaseHTTPRequestHandler):
    wizard: Wizard
    server_version = "groupx-setup"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the stdlib's name)
        pass  # the terminal shows the wizard URL and the outcome, not an access log

    # --- responses ---

    def send_body(self, status: int, body: bytes, content_type: str, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in {**SECURITY_HEADERS, **headers}.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_json(self, status: int, body: dict[str, Any]) -> None:
        self.send_body(status, json.dumps(body, ensure_ascii=False).encode(), "application/json")

    def send_error_body(self, error: GroupXError, **headers: str) -> None:
        self.send_body(error.status, json.dumps(error.as_body(), ensure_ascii=False).encode(),
                       "application/json", **headers)

    # --- guards ---

    def host_is_loopback(self) -> bool:
        host = self.headers.get("Host", "")
        port = self.wizard.httpd.server_address[1]
        return host in {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}

    def write_error(self) -> GroupXError | None:
        content_type = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            return GroupXError("INVALID_ENVELOPE", "writes must be sent as application/json", status=415)
        origin = self.headers.get("Origin")
        if origin is not None and origin != f"http://{self.headers.get('Host', '')}":
            return GroupXError("INVALID_ENVELOPE", "cross-origin writes are refused", status=403)
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            return GroupXError("INVALID_ENVELOPE", "invalid Content-Length")
        if length > MAX_BODY_BYTES:
            return GroupXError("MESSAGE_TOO_LARGE", "request body exceeds 2 MiB")
        return None

    def read_json(self) -> Any:
        return parse_json_body(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    # --- routes ---

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        if not self.host_is_loopback():
            return self.send_body(400, b"Bad Request: unexpected Host", "text/plain; charset=utf-8")
        path = self.path.split("?", 1)[0]
        if path == "/":
            return self.send_body(302, b"", "text/plain", Location="/setup")
        if path == "/setup":
            return self.send_body(200, PAGE.read_bytes(), "text/html; charset=utf-8")
        if path in STATIC:
            content_type, file = STATIC[path]
            return self.send_body(200, file.read_bytes(), content_type)
        if path == "/api/setup":
            return self.send_json(200, actions.snapshot(self.wizard.config_path, runtime_active=False))
        if path == "/api/setup/launch":
            return self.send_json(200, self.wizard.launch_state())
        return self.send_error_body(GroupXError("UNKNOWN_TARGET", f"no route {path} in the setup wizard", status=404))

    def do_POST(self) -> None:  # noqa: N802
        if not self.host_is_loopback():
            return self.send_body(400, b"Bad Request: unexpected Host", "text/plain; charset=utf-8")
        path = self.path.split("?", 1)[0]
        if path != "/api/setup":
            allow = "GET" if path in {"/api/setup/launch", "/setup"} else ""
            if allow:
                return self.send_error_body(GroupXError("INVALID_ENVELOPE", "POST is not allowed here", status=405),
                                            Allow=allow)
            return self.send_error_body(GroupXError("UNKNOWN_TARGET", f"no route {path} in the setup wizard", status=404))
        error = self.write_error()
        if error is not None:
            self.close_connection = True  # the body was not read
            return self.send_error_body(error)
        try:
            return self.send_json(200, self.wizard.save(self.read_json()))
        except GroupXError as refused:
            return self.send_error_body(refused)

    def do_HEAD(self) -> None:  # noqa: N802
        self.do_GET()

"""A real SSE client for tests: reads /api/events in a thread and parses frames."""

from __future__ import annotations

import contextlib
import json
import queue
import threading
import time

import httpx


class SseClient:
    def __init__(
        self,
        base_url: str,
        *,
        after_seq: int | None = None,
        last_event_id: int | None = None,
        slow_seconds: float = 0.0,
        hold: threading.Event | None = None,
    ):
        params = {} if after_seq is None else {"afterSeq": str(after_seq)}
        headers = {} if last_event_id is None else {"Last-Event-ID": str(last_event_id)}
        self.frames: queue.Queue = queue.Queue()
        self.durable: list[dict] = []
        self.transient: list[dict] = []
        self.comments: list[str] = []
        self.status: int | None = None
        self.closed = threading.Event()
        self._stop = threading.Event()
        self._slow = slow_seconds
        self._hold = hold  # a reader that takes the headers, then reads nothing until this is set
        self._response: httpx.Response | None = None
        self._client = httpx.Client(timeout=httpx.Timeout(10, read=60))
        self._thread = threading.Thread(target=self._run, args=(f"{base_url}/api/events", params, headers), daemon=True)
        self._thread.start()

    def _run(self, url, params, headers):
        try:
            with self._client.stream("GET", url, params=params, headers=headers) as response:
                self._response = response
                self.status = response.status_code
                if self._hold is not None:
                    self._hold.wait()
                frame: dict = {}
                for line in response.iter_lines():
                    if self._stop.is_set():
                        return
                    if line == "":
                        if "data" in frame:
                            self._deliver(frame)
                        frame = {}
                        if self._slow:
                            time.sleep(self._slow)  # a deliberately slow reader, not synchronisation
                        continue
                    if line.startswith(":"):
                        self.comments.append(line)
                        continue
                    field, _, value = line.partition(":")
                    frame[field] = value[1:] if value.startswith(" ") else value
        except httpx.HTTPError:
            pass
        finally:
            self.closed.set()

    def _deliver(self, frame: dict) -> None:
        envelope = json.loads(frame["data"])
        if "id" in frame:
            assert int(frame["id"]) == envelope["seq"], frame
            self.durable.append(envelope)
        else:
            self.transient.append(envelope)
        self.frames.put(envelope)

    def wait_for(self, predicate, *, timeout: float = 15.0, message: str = "an SSE event"):
        deadline = time.monotonic() + timeout
        while True:
            found = [e for e in list(self.durable) + list(self.transient) if predicate(e)]
            if found:
                return found[0]
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"timed out waiting for {message}")
            with contextlib.suppress(queue.Empty):
                self.frames.get(timeout=min(remaining, 0.5))

    def wait_for_seq(self, seq: int, *, timeout: float = 15.0):
        return self.wait_for(
            lambda e: e.get("seq") is not None and e["seq"] >= seq, timeout=timeout, message=f"seq {seq}"
        )

    def close(self):
        """Stop reading. The reader thread is a daemon blocked in a socket read that another thread
        cannot interrupt portably; it ends when the server closes the stream."""
        self._stop.set()
        self._thread.join(timeout=0.1)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

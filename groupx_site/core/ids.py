"""Identifiers: a readable prefix plus 128 random bits (unguessable, globally unique).

The random bits come from the operating system's CSPRNG, as ``secrets.token_hex`` takes them, but
fetched for 256 ids at a time: each ``getrandom`` call lets go of the GIL, and a throughput Turn
made ~10 ids, each a hand-over between the writer thread and the event loop's (docs/DECISIONS.md
D80). The bytes are the same kind; only the number of system calls changes. A forked child starts
a pool of its own, so parent and child never hand out the same bits.
"""

from __future__ import annotations

import os
import threading

# The fixed bindings: the web page's and the operator's (agents/models.py SessionBinding rows).
WEB_BINDING_ID = "binding:web"
OPERATOR_BINDING_ID = "binding:operator"

RANDOM_BYTES = 16  # 128 bits per id
POOL_IDS = 256  # ids per system call: 4 KiB of random bytes, hex-encoded once


class _RandomPool:
    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._hex = ""
        self._at = 0

    def next_hex(self) -> str:
        """32 hex digits no other call of this process (or of a fork of it) returns."""
        with self._lock:
            at = self._at
            if at >= len(self._hex):
                self._hex, at = os.urandom(RANDOM_BYTES * POOL_IDS).hex(), 0
            self._at = at + 2 * RANDOM_BYTES
            return self._hex[at : at + 2 * RANDOM_BYTES]


_pool = _RandomPool()
os.register_at_fork(after_in_child=_pool._reset)


def new_id(prefix: str) -> str:
    return f"{prefix}_{_pool.next_hex()}"


def event_id() -> str:
    return new_id("evt")


def correlation_id() -> str:
    return new_id("corr")


def turn_id() -> str:
    return new_id("turn")

"""The agent runtime: one session and one FIFO lane per live agent.

This first version starts nothing: Turns stay ``queued`` until the lanes land (issue 3).
"""

from __future__ import annotations


async def start() -> None:
    return None


async def stop() -> None:
    return None

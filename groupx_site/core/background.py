"""A process's background task on the event loop: started once, cancelled at shutdown."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any


class BackgroundTask:
    def __init__(self, name: str, run: Callable[[], Coroutine[Any, Any, None]]):
        self.name = name
        self._run = run
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start it on the running loop, unless it runs already."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)

    async def stop(self) -> None:
        """Cancel it and wait until it has ended (what it raised on the way out is its own)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

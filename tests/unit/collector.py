"""What the garbage collector finds after a piece of code: the reference cycles it left (D76)."""

from __future__ import annotations

import gc
from collections.abc import Callable


def garbage_after(run: Callable[[], object]) -> list:
    """The objects only the collector would free after ``run()`` (``gc.DEBUG_SAVEALL`` keeps them
    to look at); what was garbage before is collected first."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        run()
        gc.collect()
        return list(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()

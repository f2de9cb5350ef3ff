"""These tests run their own event loops: hide the one a browser session leaves parked
(tests/event_loops.py)."""

from tests.event_loops import no_parked_event_loop  # noqa: F401 (an autouse fixture)

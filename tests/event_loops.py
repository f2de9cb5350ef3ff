"""A fixture for test folders whose tests run their own event loop or synchronous Django code.

Playwright's sync API (tests/browser/conftest.py) keeps its event loop marked as *running* on the
main thread for the whole session, parked while each test's code runs. In an xdist worker that ran
a browser file first, pytest-asyncio's runner then refuses to start ("Runner.run() cannot be called
from a running event loop") and Django refuses queries ("called from an async context"). A folder's
conftest imports ``no_parked_event_loop`` to hide that loop for each of its modules and put it back
after.
"""

from __future__ import annotations

import asyncio

import pytest


@pytest.fixture(scope="module", autouse=True)
def no_parked_event_loop():
    # Module scope: set up before the function-scoped fixtures that open a loop or a connection.
    parked = asyncio._get_running_loop()
    asyncio._set_running_loop(None)
    yield
    asyncio._set_running_loop(parked)

"""``GET /api/health`` reports the speed seam's mechanisms as the process runs them, from
``groupx.json`` ``server.speedups`` and the older ``server.threadsOnOneCpu`` (groupx_site/speedups/switches.py)."""

from __future__ import annotations

import pytest

from groupx_site.speedups import switches as speedups_switches


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        ({"speedups": True}, dict.fromkeys(speedups_switches.NAMES, True)),
        ({"speedups": False}, dict.fromkeys(speedups_switches.NAMES, False)),
        ({"speedups": {"socketWrites": False}}, {name: name != "socketWrites" for name in speedups_switches.NAMES}),
        (
            {"speedups": True, "threadsOnOneCpu": False},
            {name: name != "threadsOnOneCpu" for name in speedups_switches.NAMES},
        ),
    ],
    ids=["all on", "all off", "one off", "the older key"],
)
def test_health_reports_each_mechanism_as_the_config_sets_it(make_server, server, expected):
    running = make_server(server={"host": "127.0.0.1", "port": 4310, **server})
    health = running.get("/api/health").json()
    assert health["speedups"] == expected
    assert set(health["speedups"]) == set(speedups_switches.NAMES)

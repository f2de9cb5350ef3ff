"""A room of two hundred agents answers health all through its start (docs/DECISIONS.md D92). It
starts two hundred fake CLIs, so it runs in the fault tier with the other load tests, not in
`make test`."""

from __future__ import annotations

from tests.groupx_cli import Foreground, fake, write_config
from tests.server import free_port
from tests.test_start_health import every_health_answer_until_ready


def test_health_answers_all_through_the_start_of_a_two_hundred_agent_room(tmp_path):
    port = free_port()
    agents = {f"a{n}": fake(tmp_path, "kimi", f"a{n}") for n in range(200)}
    config = write_config(tmp_path, port, agents, timeouts={"handshakeMs": 120000, "closeMs": 500})
    room = Foreground(tmp_path, "start", "--no-open", "--config", str(config))
    try:
        answers = every_health_answer_until_ready(port, room, interval=0.1)

        starting = [r.json() for r in answers if r.json()["readiness"] == "starting"]
        assert starting  # asked while the agents started ...
        midway = [{a["status"] for a in body["agents"]} for body in starting]
        assert any({"ready", "starting"} <= found for found in midway)  # ... and answered with some up, some not
        assert {a["status"] for a in answers[-1].json()["agents"]} == {"ready"}
    finally:
        room.terminate()

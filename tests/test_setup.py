"""Setup (PROTOCOL §10.6, FEATURES §2.3): ``/api/setup`` in a running GroupX, the one place the
agents change (the first run writes a starter config instead of a wizard: tests/test_first_run.py)."""

from __future__ import annotations

import json
import re
import uuid

import httpx
import pytest

from tests.server import FAKES_BIN, GroupXServer, hanging_agent


def agent(agent_id: str, cwd, *, driver: str = "kimi", enabled: bool = True, **extra) -> dict:
    return {
        "id": agent_id,
        "driver": driver,
        "name": agent_id.title(),
        "identity": "",
        "command": {"executable": str(FAKES_BIN / driver), "prefixArgs": []},
        "cwd": str(cwd),
        "enabled": enabled,
        **extra,
    }


def draft(*agents: dict, port: int = 4310, **extra) -> dict:
    return {"config": {"serverPort": port, "storagePath": ".groupx/groupx.db", "agents": list(agents), **extra}}


def issues_of(response: httpx.Response) -> dict[str, str]:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "INVALID_ENVELOPE"
    return {issue["path"]: issue["code"] for issue in error["details"]["issues"]}


# --- /api/setup in a running instance -----------------------------------------------------------


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    """One server for the tests that leave groupx.json as it is (reads and refused saves)."""
    workdir = tmp_path_factory.mktemp("setup")
    server = GroupXServer(
        workdir, {"agents": {"sleeper": hanging_agent(workdir)}, "timeouts": {"handshakeMs": 600000, "closeMs": 300}}
    )
    server.start()
    yield server
    server.stop()


def test_the_snapshot_shows_the_file_the_drivers_and_an_editable_draft(running):
    server = running

    snapshot = server.get("/api/setup").json()

    assert snapshot["configPath"] == str(server.config_path)
    assert snapshot["existing"] is True and snapshot["runtimeActive"] is True
    assert [d["driver"] for d in snapshot["drivers"]] == ["codex", "grok", "kimi", "hermes", "claude"]
    assert all(isinstance(d["found"], bool) for d in snapshot["drivers"])
    config = snapshot["config"]
    assert config["serverPort"] == 4310 and config["storagePath"] == ".groupx/groupx.db"
    [sleeper] = config["agents"]
    assert set(sleeper) == {"id", "driver", "name", "identity", "command", "cwd", "enabled"}
    assert sleeper["id"] == "sleeper" and sleeper["command"]["prefixArgs"] == []
    assert config["assistant"]["enabled"] is False  # an existing file without an assistant keeps it off
    assert snapshot["assistantAvailable"] is True  # the page shows the assistant's card (D49)
    assert "existingConfigError" not in snapshot


@pytest.mark.parametrize(
    ("agents", "expected"),
    [
        (lambda cwd: [agent("kimi", cwd), agent("kimi", cwd)], {"config.agents.1.id": "duplicate_id"}),
        (lambda cwd: [agent("assistant", cwd)], {"config.agents.0.id": "reserved_id"}),
        (lambda cwd: [agent("__assistant__", cwd)], {"config.agents.0.id": "reserved_id"}),
        (lambda cwd: [agent("-bad", cwd)], {"config.agents.0.id": "invalid_id"}),
        (lambda cwd: [agent("kimi", cwd, enabled=False)], {"config.agents": "none_enabled"}),
        (lambda cwd: [agent("kimi", cwd / "missing")], {"config.agents.0.cwd": "cwd_not_found"}),
        (lambda cwd: [agent("kimi", cwd, sandbox="off")], {"config.agents.0.sandbox": "forbidden_field"}),
        (lambda cwd: [agent("kimi", cwd, colour="red")], {"config.agents.0.colour": "unknown_field"}),
        (lambda cwd: [agent("kimi", cwd, ssh="-oProxyCommand=sh")], {"config.agents.0.ssh": "string_pattern_mismatch"}),
        (
            lambda cwd: [{**agent("kimi", cwd), "cwd": "repo", "ssh": "me@box"}],
            {"config.agents.0.cwd": "cwd_not_absolute"},
        ),
    ],
    ids=[
        "duplicate",
        "reserved",
        "reserved-dunder",
        "malformed",
        "none-enabled",
        "missing-cwd",
        "sandbox",
        "unknown",
        "ssh-option",
        "ssh-relative-cwd",
    ],
)
def test_a_bad_draft_is_refused_with_messages_next_to_the_fields(running, agents, expected):
    server = running
    before = server.config_path.read_text()

    response = server.post("/api/setup", draft(*agents(server.workdir)))

    assert issues_of(response) == expected
    assert all(i["message"] for i in response.json()["error"]["details"]["issues"])
    assert server.config_path.read_text() == before


@pytest.mark.parametrize(
    ("assistant", "expected"),
    [
        (lambda cwd: {"enabled": True, "brain": None}, "brain_required"),
        (lambda cwd: {"enabled": False, "brain": {"driver": "claude", "cwd": str(cwd / "missing")}}, "cwd_not_found"),
    ],
    ids=["enabled-without-brain", "brain-cwd-missing"],
)
def test_an_assistant_without_a_working_directory_that_exists_is_refused_at_its_cwd(running, assistant, expected):
    server = running
    before = server.config_path.read_text()

    response = server.post("/api/setup", draft(agent("kimi", server.workdir), assistant=assistant(server.workdir)))

    assert issues_of(response) == {"config.assistant.brain.cwd": expected}
    assert server.config_path.read_text() == before


def test_transport_and_other_top_level_fields_are_not_settings(running):
    server = running
    body = draft(agent("kimi", server.workdir))
    body["config"]["transport"] = "direct"
    body["config"]["approval"] = "never"

    issues = issues_of(server.post("/api/setup", body))

    assert issues == {"config.transport": "forbidden_field", "config.approval": "forbidden_field"}


def test_a_body_without_the_config_wrapper_is_refused(running):
    server = running

    issues = issues_of(server.post("/api/setup", draft(agent("kimi", server.workdir))["config"]))

    assert "config" in issues


def test_saving_in_a_running_instance_requires_a_restart_and_marks_new_agents_pending(make_server):
    server = make_server(limits={"queuePerAgent": 7}, timeouts={"closeMs": 300, "idleMs": 123_456})
    current = server.get("/api/setup").json()["config"]
    reviewer = agent("reviewer", server.workdir)
    current["agents"].append(reviewer)

    response = server.post("/api/setup", {"config": current})

    assert response.status_code == 200, response.text
    saved = response.json()
    assert re.fullmatch(r"[0-9a-f]{64}", saved.pop("revision"))  # the file's new revision
    assert saved == {
        "saved": True,
        "configPath": str(server.config_path),
        "agentCount": 2,
        "enabledAgentCount": 2,
        "restartRequired": True,
    }
    written = json.loads(server.config_path.read_text())
    assert written["agents"]["reviewer"]["command"] == reviewer["command"]["executable"]
    assert written["limits"] == {"queuePerAgent": 7}  # kept, not part of the draft
    assert written["timeouts"] == {"closeMs": 300, "idleMs": 123_456}
    # shown as pending restart, not started and not a target
    snapshot = server.get("/api/bootstrap").json()
    assert [a["actorId"] for a in snapshot["agents"]] == ["agent:sleeper"]
    assert snapshot["pendingAgents"] == [
        {
            "actorId": "agent:reviewer",
            "displayName": "Reviewer",
            "driver": "kimi",
            "status": "pending_restart",
            "cwd": str(server.workdir),
            "host": "local",
            "enabled": True,
        }
    ]
    refused = server.post(
        "/api/messages", {"clientCommandId": str(uuid.uuid4()), "to": ["agent:reviewer"], "content": "hello"}
    )
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "UNKNOWN_TARGET"
    assert [a["actorId"] for a in server.get("/api/health").json()["agents"]] == ["agent:sleeper"]


def test_a_cross_origin_save_is_refused(running):
    server = running

    response = server.post(
        "/api/setup", draft(agent("kimi", server.workdir)), headers={"Origin": "http://evil.example"}
    )

    assert response.status_code == 403


def test_the_setup_page_loads_its_script_and_styles_from_fingerprinted_files(running):
    server = running

    page = server.get("/setup")

    assert page.status_code == 200
    assert "default-src 'self'" in page.headers["Content-Security-Policy"]
    html = page.text
    # Through {% static %}, like the room: the fingerprinted, long-cached names (D120).
    script = re.search(r'<script type="module" src="(/static/setup_wizard/setup\.[0-9a-f]{12}\.js)"></script>', html)
    assert script, html
    assert re.search(r'<link rel="stylesheet" href="/static/setup_wizard/setup\.[0-9a-f]{12}\.css">', html)
    assert not re.search(r"<script>|<style>|\sstyle=|\son[a-z]+=", html)  # nothing inline: the CSP would block it
    assert server.get(script.group(1)).status_code == 200
    assert 'id="assistant"' in html

"""groupx.json parsing (FEATURES §2.1): strict, with errors that name the key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from setup_wizard.config import ConfigError, parse_config, resolve_agents

REPO = Path(__file__).resolve().parents[1]


def agents(**entries):
    return {"agents": entries or {"kimi": {"cwd": "."}}}


def test_defaults_apply_and_missing_agents_mean_codex_grok_kimi(tmp_path):
    config = parse_config({})
    assert config.server.port == 4310 and config.storage.path == ".groupx/groupx.db"
    assert config.limits.queuePerAgent == 64 and config.timeouts.idleMs == 300_000
    assert [a.actor_id for a in resolve_agents(config, tmp_path / "groupx.json")] == [
        "agent:codex",
        "agent:grok",
        "agent:kimi",
    ]


def test_direct_transport_is_refused_with_a_clear_message():
    with pytest.raises(ConfigError, match="direct.*deprecated"):
        parse_config({"transport": "direct"})


@pytest.mark.parametrize(
    ("raw", "names"),
    [
        ({"colour": 1}, "colour: unknown key"),
        ({"server": {"host": "0.0.0.0"}}, "server.host"),
        ({"server": {"port": 70000}}, "server.port"),
        ({"limits": {"queuePerAgent": 0}}, "limits.queuePerAgent"),
        ({"limits": {"messageCharacters": 1000}}, "limits.messageCharacters"),
        ({"timeouts": {"idleMs": "5"}}, "timeouts.idleMs"),
        ({"agents": {}}, "agents"),
        ({"agents": {"assistant": {"cwd": "."}}}, "reserved"),
        ({"agents": {"-bad": {"cwd": "."}}}, "-bad"),
        ({"agents": {"reviewer": {"cwd": "."}}}, "driver is required"),
        ({"agents": {"kimi": {"cwd": ".", "sandbox": "off"}}}, "agents.kimi.sandbox: unknown key"),
        ({"agents": {"kimi": {}}}, "agents.kimi.cwd"),
        ({"agents": {"kimi": {"cwd": ".", "command": {"executable": "kimi", "prefixArgs": ["--yolo"]}}}}, "prefixArgs"),
        ({"channelLayer": {"redisUrl": "redis://10.0.0.5:6379/0"}}, "channelLayer.redisUrl"),
        ({"channelLayer": {"redisUrl": "redis://redis.example.com:6379"}}, "host must be loopback"),
        ({"channelLayer": {"redisUrl": "rediss://127.0.0.1:6379"}}, "channelLayer.redisUrl"),
        ({"channelLayer": {"redisUrl": "redis://127.0.0.1:99999"}}, "port"),
        ({"channelLayer": {"redisUrl": "redis://127.0.0.1:6379/zero"}}, "database number"),
        ({"channelLayer": {"redisUrl": "unix://host/tmp/redis.sock"}}, "unix:///absolute/path"),
        ({"channelLayer": {"redisUrl": ""}}, "channelLayer.redisUrl"),
        ({"channelLayer": {}}, "channelLayer.redisUrl"),
        ({"channelLayer": {"redisUrl": "redis://127.0.0.1", "db": 1}}, "channelLayer.db: unknown key"),
        ({"agents": {"kimi": {"cwd": "/srv/repo", "ssh": "-oProxyCommand=sh"}}}, "not an ssh destination"),
        ({"agents": {"kimi": {"cwd": "/srv/repo", "ssh": "ssh://box:22"}}}, "not an ssh destination"),
        ({"agents": {"kimi": {"cwd": "/srv/repo", "ssh": "me@box repo"}}}, "not an ssh destination"),
        ({"agents": {"kimi": {"cwd": "/srv/repo", "ssh": ""}}}, "agents.kimi.ssh"),
        ({"agents": {"kimi": {"cwd": "repo", "ssh": "me@box"}}}, "absolute path on me@box"),
    ],
)
def test_invalid_configs_name_the_offending_key(raw, names):
    with pytest.raises(ConfigError) as error:
        parse_config(raw)
    assert names in str(error.value)


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:6379/0",
        "redis://localhost",
        "redis://[::1]:6380/2",
        "redis://127.0.0.2:7000",
        "unix:///run/redis/redis.sock",
    ],
)
def test_a_channel_layer_on_loopback_or_a_unix_socket_is_accepted(url):
    assert parse_config({"channelLayer": {"redisUrl": url}}).channelLayer.redisUrl == url


def test_a_remote_agent_keeps_its_remote_cwd_as_written_and_a_local_one_runs_here(tmp_path):
    config = parse_config({"agents": {"kimi": {"cwd": "/srv/repo", "ssh": "me@build-box.lan"}, "grok": {"cwd": "."}}})
    remote, local = resolve_agents(config, tmp_path / "groupx.json")

    assert (remote.cwd, remote.ssh, remote.host) == ("/srv/repo", "me@build-box.lan", "me@build-box.lan")
    assert (local.cwd, local.ssh, local.host) == (str(tmp_path), None, "local")


def test_a_remote_agents_script_is_not_looked_for_on_this_machine():
    command = {"executable": "python3", "prefixArgs": ["/opt/remote-only/agent.py"]}
    config = parse_config({"agents": {"x": {"driver": "kimi", "cwd": "/srv", "ssh": "box", "command": command}}})

    assert config.agents["x"].command.prefixArgs == ["/opt/remote-only/agent.py"]
    with pytest.raises(ConfigError, match="prefixArgs"):
        parse_config({"agents": {"x": {"driver": "kimi", "cwd": "/srv", "command": command}}})


def test_without_a_channel_layer_the_config_names_none():
    assert parse_config({}).channelLayer is None


def test_an_interpreter_may_run_exactly_one_existing_script(tmp_path):
    script = tmp_path / "agent.py"
    script.write_text("print()")
    ok = parse_config(
        {
            "agents": {
                "x": {"driver": "kimi", "cwd": ".", "command": {"executable": "python3", "prefixArgs": [str(script)]}}
            }
        }
    )
    assert ok.agents["x"].command.prefixArgs == [str(script)]
    for bad in ([str(script), str(script)], [str(tmp_path / "missing.py")]):
        with pytest.raises(ConfigError, match="prefixArgs"):
            parse_config(
                {
                    "agents": {
                        "x": {"driver": "kimi", "cwd": ".", "command": {"executable": "python3", "prefixArgs": bad}}
                    }
                }
            )
    with pytest.raises(ConfigError, match="interpreter"):
        parse_config(
            {
                "agents": {
                    "x": {
                        "driver": "kimi",
                        "cwd": ".",
                        "command": {"executable": "/bin/sh", "prefixArgs": [str(script)]},
                    }
                }
            }
        )


def test_legacy_generated_defaults_are_upgraded_and_custom_values_kept():
    config = parse_config({"limits": {"contextCharacters": 48_000, "rootTurns": 30}, "timeouts": {"idleMs": 120_000}})
    assert config.limits.contextCharacters == 256_000
    assert config.limits.rootTurns == 30
    assert config.timeouts.idleMs == 300_000


def test_a_direct_config_stops_the_server_before_any_file_is_opened(tmp_path):
    (tmp_path / "groupx.json").write_text('{"transport": "direct"}')
    result = subprocess.run(
        [sys.executable, "manage.py", "migrate"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={"GROUPX_CONFIG": str(tmp_path / "groupx.json"), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode != 0
    assert "deprecated" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["groupx.json"]


def test_storage_resolves_relative_to_the_config_file(tmp_path):
    from setup_wizard.config import storage_path

    config = parse_config({"storage": {"path": "data/room.db"}})
    assert storage_path(config, tmp_path / "groupx.json") == tmp_path / "data" / "room.db"


def test_a_remote_agent_survives_a_round_trip_through_the_setup_draft():
    from setup_wizard.actions import Draft, build_config, draft_from_config

    raw = {"agents": {"kimi": {"cwd": "/srv/repo", "ssh": "me@box"}, "grok": {"cwd": "."}}}
    editable = draft_from_config(parse_config(raw))

    written = build_config(Draft.model_validate(editable), raw)

    assert written["agents"]["kimi"]["ssh"] == "me@box" and written["agents"]["kimi"]["cwd"] == "/srv/repo"
    assert "ssh" not in written["agents"]["grok"]
    assert parse_config(written).agents["kimi"].ssh == "me@box"


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://groupx@127.0.0.1:5432/groupx",
        "postgres://localhost/room_1",
        "postgresql://u:p%40ss@[::1]/groupx?sslmode=disable",
        "postgresql:///groupx?host=/var/run/postgresql",
    ],
)
def test_a_postgresql_url_on_loopback_or_a_unix_socket_is_the_store(url):
    from groupx_site.store.postgresql import postgresql_database

    config = parse_config({"storage": {"url": url}})
    assert config.storage.url == url and config.storage.path == ".groupx/groupx.db"
    settings = postgresql_database(url, busy_timeout_ms=5000)
    assert (
        settings["ENGINE"] == "django.db.backends.postgresql" and "lock_timeout=5000" in settings["OPTIONS"]["options"]
    )


@pytest.mark.parametrize(
    "url, reason",
    [
        ("postgresql://db.example.com/groupx", "loopback"),
        ("postgresql://10.0.0.5:5432/groupx", "loopback"),
        ("mysql://127.0.0.1/groupx", "postgresql://"),
        ("postgresql://127.0.0.1/", "name the database"),
        ("postgresql://127.0.0.1:99999/groupx", "port"),
        ("postgresql:///groupx", "socket directory"),
        ("postgresql://127.0.0.1/groupx?host=/tmp", "not both"),
        ("postgresql://127.0.0.1/groupx?options=-c%20x", "query parameters"),
    ],
)
def test_a_postgresql_url_beyond_loopback_or_malformed_is_refused_with_the_reason(url, reason):
    with pytest.raises(ConfigError, match=reason):
        parse_config({"storage": {"url": url}})


def test_saving_the_setup_draft_keeps_the_postgresql_url_of_the_file():
    from setup_wizard.actions import Draft, build_config

    previous = {"storage": {"path": ".groupx/groupx.db", "url": "postgresql://127.0.0.1/groupx"}}
    draft = {
        "serverPort": 4310,
        "storagePath": "data/room.db",
        "agents": [{"id": "kimi", "driver": "kimi", "name": "Kimi", "command": {"executable": "kimi"}, "cwd": "."}],
    }
    raw = build_config(Draft.model_validate(draft), previous)
    assert raw["storage"] == {"path": "data/room.db", "url": "postgresql://127.0.0.1/groupx"}

"""The channel layer on a real Redis (docs/DECISIONS.md D43): ``groupx doctor`` reads its version and
``groupx start --split`` runs the web process and the agent worker over it. Debian's
``redis-server`` on a free loopback port, started here and stopped here; skipped where there is none
(``make test-split`` installs it)."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest

from setup_wizard.doctor import probe_redis
from tests.groupx_cli import (
    Foreground,
    cli_env,
    fake,
    groupx,
    isolated_path,
    port_refuses,
    write_config,
)
from tests.server import REPO, free_port, wait_until
from tests.sse import SseClient

PUBLISH_A_DELTA = """
import asyncio, django
django.setup()
from channels.layers import get_channel_layer
from rooms import bus

delta = {"type": "turn.content.delta", "seq": None, "durability": "transient",
         "body": {"turnId": "turn_from_another_process", "chunkIndex": 0, "text": "hi"}}
asyncio.run(get_channel_layer().group_send(bus.BUS_GROUP, bus.items_message([["t", delta]])))
"""

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")


@pytest.fixture
def redis_url(tmp_path):
    port = free_port()
    server = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        wait_until(lambda: probe_redis(url, timeout=0.5).reachable, timeout=20, message="redis-server answering")
        yield url
    finally:
        server.terminate()
        server.wait(10)


def test_doctor_shows_the_version_of_the_channel_layers_redis(tmp_path, redis_url):
    config = write_config(tmp_path, 4310, channelLayer={"redisUrl": redis_url})
    env = cli_env(tmp_path, PATH=f"{isolated_path(tmp_path, 'kimi')}:/usr/bin:/bin")

    result = groupx("doctor", "--config", str(config), workdir=tmp_path, env=env, timeout=30)

    assert result.returncode == 0, result.stdout
    assert f"channel layer: {redis_url} (redis " in result.stdout


def test_split_mode_answers_a_message_over_redis_and_a_sigterm_stops_both_processes(tmp_path, redis_url):
    port = free_port()
    config = write_config(tmp_path, port, {"kimi": fake(tmp_path, "kimi")}, channelLayer={"redisUrl": redis_url})
    split = Foreground(tmp_path, "start", "--split", "--no-open", "--config", str(config))
    try:
        wait_until(lambda: "GroupX split mode:" in split.output(), timeout=120, message="both processes started")
        stream = SseClient(f"http://127.0.0.1:{port}", after_seq=0)
        posted = httpx.post(
            f"http://127.0.0.1:{port}/api/messages",
            timeout=10,
            json={"clientCommandId": uuid.uuid4().hex, "to": ["agent:kimi"], "content": "over the layer"},
        )
        assert posted.status_code == 202, posted.text
        turn_id = posted.json()["turns"][0]["turnId"]

        stream.wait_for(
            lambda e: e["type"] == "turn.completed" and e["body"]["turnId"] == turn_id,
            timeout=60,
            message="the Turn completed: its wake-up went through Redis",
        )

        # Another process on the layer (as the worker is) publishes a delta: the web process's
        # bus relay hands it to this stream.
        publisher = subprocess.run(
            [sys.executable, "-c", PUBLISH_A_DELTA],
            cwd=REPO,
            capture_output=True,
            text=True,
            env={**cli_env(tmp_path), "GROUPX_CONFIG": str(config)},
            timeout=60,
        )
        assert publisher.returncode == 0, publisher.stderr
        stream.wait_for(
            lambda e: e["body"].get("turnId") == "turn_from_another_process",
            timeout=30,
            message="the other process's delta",
        )
        stream.close()
    finally:
        split.proc.send_signal(signal.SIGTERM)
        split.proc.wait(60)
    output = split.output()
    assert split.proc.returncode == 0 and "GroupX (split mode) stopped." in output, output
    pids = [int(pid) for pid in re.findall(r"\(pid (\d+)\)", output)]
    assert len(pids) == 2 and not any(Path(f"/proc/{pid}").exists() for pid in pids)  # web and worker ended
    assert port_refuses(port)

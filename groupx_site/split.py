"""``groupx start --split``: the web process and the agent worker as two child processes on one
machine, talking over Redis on loopback (docs/DECISIONS.md D43; README "Split mode").

It refuses, before starting anything, when ``groupx.json`` names no ``channelLayer.redisUrl`` or
that Redis does not answer (bounded probes: never a hang), and when the port is already taken. Then
it starts the web process (``groupx start --no-open``: daphne; with a Redis URL it leaves the agents
to the worker), waits until it is ready (migrations applied), starts the worker (``manage.py
runworker groupx-agents``), and stays in the foreground: Ctrl-C or SIGTERM stops both, and when one
child ends the other is stopped too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from groupx_site.console import fail, say
from groupx_site.port_probe import Target, conflict_message
from groupx_site.store.layer import AGENTS_CHANNEL
from setup_wizard.doctor import probe_redis, shown_url

REPO = Path(__file__).resolve().parent.parent
READY_SECONDS = 120.0  # the web process migrates and starts first; generous on a loaded machine
GRACE_SECONDS = 10.0  # after SIGTERM, before SIGKILL


def refusal(target: Target) -> str | None:
    """Why split mode cannot start with this config, or None."""
    layer = target.config.channelLayer
    if layer is None:
        return (
            f'split mode needs a channel layer: add "channelLayer": {{"redisUrl": '
            f'"redis://127.0.0.1:6379/0"}} to {target.path} (a Redis on this machine)'
        )
    found = probe_redis(layer.redisUrl)
    if not found.reachable:
        return (
            f"split mode: the Redis at {shown_url(layer.redisUrl)} (channelLayer.redisUrl) does not answer "
            f"({found.detail}); start redis-server there, or fix the URL"
        )
    running = target.probe_patiently()
    if running.kind != "unreachable":
        return conflict_message(running, target) or (
            f"GroupX is already running at {target.origin}; stop it (`groupx stop`) before starting split mode"
        )
    return None


def start_split(target: Target) -> int:
    refused = refusal(target)
    if refused is not None:
        return fail(refused)
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    env = {**os.environ, "GROUPX_CONFIG": str(target.path), "DJANGO_SETTINGS_MODULE": "groupx_site.settings"}
    children: list[subprocess.Popen] = []
    try:
        web = _spawn([sys.executable, "-m", "groupx_site", "start", "--no-open", "--config", str(target.path)], env)
        children.append(web)
        if not _ready(target, web, stop):
            return fail("split mode: the web process did not become ready; see its output above")
        worker = _spawn([sys.executable, "-m", "django", "runworker", AGENTS_CHANNEL], env)
        children.append(worker)
        say(
            f"GroupX split mode: web (pid {web.pid}) at {target.origin}, agent worker (pid {worker.pid}), "
            f"Redis at {shown_url(target.config.channelLayer.redisUrl)}. Ctrl+C stops both."
        )
        while not stop.wait(0.2):
            ended = next((child for child in children if child.poll() is not None), None)
            if ended is not None:
                name = "web process" if ended is web else "agent worker"
                fail(f"split mode: the {name} exited ({ended.returncode}); stopping the other")
                return 1
        return 0
    finally:
        _stop_all(children)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        say("GroupX (split mode) stopped.")


def _spawn(argv: list[str], env: dict[str, str]) -> subprocess.Popen:
    # Its own process group: a Ctrl-C in the terminal reaches this process, which stops the
    # children in order, instead of reaching all three at once.
    return subprocess.Popen(argv, cwd=REPO, env=env, start_new_session=True)


def _ready(target: Target, web: subprocess.Popen, stop: threading.Event) -> bool:
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline and web.poll() is None and not stop.is_set():
        found = target.probe()
        if found.kind == "groupx" and found.health.get("readiness") == "ready":
            return True
        stop.wait(0.1)
    return False


def _stop_all(children: list[subprocess.Popen]) -> None:
    """The worker first (its sessions), then the web process; SIGKILL after the grace period."""
    for child in reversed(children):
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
        try:
            child.wait(GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()

"""Run the real ``groupx`` command in subprocesses (``python -m groupx_site``), each with its own
config file and a port picked here, and look at it only from outside: exit codes, output, HTTP."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from tests.server import FAKES_BIN, REPO, wait_until


def port_refuses(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) != 0


def fake(workdir: Path, driver: str, agent_id: str | None = None) -> dict:
    cwd = workdir / f"cwd-{agent_id or driver}"
    cwd.mkdir(parents=True, exist_ok=True)
    return {"driver": driver, "command": str(FAKES_BIN / driver), "cwd": str(cwd)}


def write_config(workdir: Path, port: int, agents: dict | None = None, **extra) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "groupx.json"
    document = {
        "server": {"host": "127.0.0.1", "port": port},
        "agents": agents or {"kimi": fake(workdir, "kimi")},
        "timeouts": {"closeMs": 500},
        **extra,
    }
    path.write_text(json.dumps(document, indent=2))
    return path


def isolated_path(workdir: Path, *clis: str) -> str:
    """A PATH on which the only agent CLIs are ``clis`` (the fakes, under their real names), so no
    codex, claude, kimi, hermes or grok this machine may have installed is found. It holds
    ``python3`` too: the fakes start with ``#!/usr/bin/env python3``."""
    bin_dir = workdir / "isolated-bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in ("python3", "python"):
        wrapper = bin_dir / name
        wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        wrapper.chmod(0o755)
    for cli in clis:
        (bin_dir / cli).symlink_to(FAKES_BIN / cli)
    return str(bin_dir)


def cli_env(workdir: Path, **extra: str) -> dict:
    # No inherited GROUPX_CONFIG, and never a browser from a test (no display).
    inherited = {k: v for k, v in os.environ.items() if k not in {"GROUPX_CONFIG", "DISPLAY", "WAYLAND_DISPLAY"}}
    return {
        **inherited,
        "PYTHONUNBUFFERED": "1",
        "GROUPX_FAKE_LOG_DIR": str(workdir / "fake-logs"),
        "GROUPX_FAKE_STATE_DIR": str(workdir / "fake-state"),
        **extra,
    }


def groupx(*args: str, workdir: Path, timeout: float = 60, env: dict | None = None) -> subprocess.CompletedProcess:
    """A command that ends by itself (stop, a reused start, doctor, …)."""
    return subprocess.run(
        [sys.executable, "-m", "groupx_site", *args],
        cwd=REPO,
        env=env or cli_env(workdir),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def health(port: int) -> dict | None:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2).json()
    except (httpx.HTTPError, ValueError):
        return None


class Foreground:
    """``groupx start|restart`` running in the foreground, as in a terminal; output goes to a file."""

    def __init__(self, workdir: Path, *args: str, env: dict | None = None):
        workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = workdir / f"groupx-{len(list(workdir.glob('groupx-*.log')))}.log"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "groupx_site", *args],
                cwd=REPO,
                env=env or cli_env(workdir),
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def wait_ready(self, port: int, *, timeout: float = 60) -> dict:  # generous: CI machines get loaded
        def ready():
            if self.proc.poll() is not None:
                raise AssertionError(f"groupx exited with {self.proc.returncode}:\n{self.output()}")
            found = health(port)
            return found if found and found.get("readiness") == "ready" else None

        return wait_until(ready, timeout=timeout, interval=0.05, message=f"GroupX ready on port {port}")

    def wait_exit(self, *, timeout: float = 60) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"groupx did not exit within {timeout}s:\n{self.output()}") from None

    def running(self) -> bool:
        return self.proc.poll() is None

    def terminate(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

"""Who is on the port (PROTOCOL §10.6): the ``groupx`` command asks ``GET /api/health`` before it
starts, stops or restarts anything, and tells this config's own runtime from another GroupX, a
foreign program and a listener that does not answer (``groupx_site/cli.py`` acts on the answer).

Where to ask comes from the run file a serving runtime keeps beside its config (``.groupx.json.run``:
its address and pid, written once it listens, removed when it stops), so ``groupx stop`` and
``groupx restart-agent`` reach the running room even when ``groupx.json`` no longer parses or names
another port (docs/DECISIONS.md D102). Without a run file the config says where."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groupx_site import runtime_identity
from setup_wizard.config import GroupXConfig, ServerConfig

PROBE_TIMEOUT = 0.5
REPROBES = 3
POLL_SECONDS = 0.1


@dataclass
class Probe:
    # "unreachable": nobody listens; "groupx": a GroupX runtime identified itself; "foreign": an
    # answer that is not GroupX's; "silent": something accepted the connection but did not answer
    # in time (a busy GroupX that is still migrating, or anything else).
    kind: str
    status: int | None = None
    health: dict[str, Any] = field(default_factory=dict)

    @property
    def runtime_key(self) -> str | None:
        return self.health.get("runtimeKey")

    @property
    def scope_key(self) -> str | None:
        return self.health.get("runtimeScopeKey")

    @property
    def closing(self) -> bool:
        return self.health.get("status") == "closing"


def _is_hex64(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def probe(host: str, port: int, *, timeout: float = PROBE_TIMEOUT) -> Probe:
    """``GET /api/health``; only a refused connection means nobody is listening."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", "/api/health", headers={"Accept": "application/json"})
        response = conn.getresponse()
        status, raw = response.status, response.read(256 * 1024)
    except ConnectionRefusedError:
        return Probe("unreachable")
    except (TimeoutError, ConnectionResetError):  # RemoteDisconnected too: a listener closing mid-request
        return Probe("silent")
    except (OSError, http.client.HTTPException):  # an answer, but not HTTP: not us
        return Probe("foreign")
    finally:
        conn.close()
    try:
        body = json.loads(raw)
    except ValueError:
        return Probe("foreign", status)
    if (
        isinstance(body, dict)
        and body.get("service") == runtime_identity.SERVICE
        and body.get("protocol") == runtime_identity.PROTOCOL
        and _is_hex64(body.get("runtimeKey"))
        and _is_hex64(body.get("runtimeScopeKey"))
    ):
        return Probe("groupx", status, body)
    return Probe("foreign", status)


@dataclass
class Target:
    """This config's address and identity."""

    path: Path
    config: GroupXConfig

    @property
    def host(self) -> str:
        return self.config.server.host

    @property
    def port(self) -> int:
        return self.config.server.port

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def key(self) -> str:
        return runtime_identity.runtime_key(self.config, self.path)

    @property
    def scope_key(self) -> str:
        return runtime_identity.runtime_scope_key(self.path)

    def probe(self) -> Probe:
        return probe(self.host, self.port)

    def probe_patiently(self, attempts: int = REPROBES) -> Probe:
        """A listener that stays silent for one 500 ms probe gets two more chances: a GroupX busy
        migrating its store must not be mistaken for a foreign program."""
        found = self.probe()
        for _ in range(attempts - 1):
            if found.kind != "silent":
                break
            time.sleep(POLL_SECONDS)
            found = self.probe()
        return found


def conflict_message(found: Probe, target: Target) -> str | None:
    """None when ``found`` is this very config's runtime (reuse); otherwise why it is a conflict."""
    where = f"port {target.port} on {target.host}"
    if found.kind == "groupx" and found.runtime_key == target.key:
        if found.closing:
            return f"GroupX for this config is shutting down on {where}; run `groupx start` again once it has stopped."
        return None
    if found.kind == "groupx" and found.scope_key == target.scope_key:
        return (
            f"GroupX for this config is already running on {where}, started before {target.path.name} "
            "changed. Run `groupx restart` to apply the new settings."
        )
    if found.kind == "groupx":
        return (
            f"{where} is used by another GroupX instance (a different groupx.json). GroupX will not stop it "
            f"or pick another port: stop that instance, or set another server.port in {target.path}."
        )
    if found.kind == "silent":
        return (
            f"{where} is held by a program that does not answer. GroupX will not stop it or pick another "
            f"port: free the port, or set another server.port in {target.path}."
        )
    return (
        f"{where} is in use by another program (not GroupX). GroupX will not stop it or pick another "
        f"port: free the port, or set another server.port in {target.path}."
    )


# --- the run file ---------------------------------------------------------------------------------


def run_file_path(config_path: Path) -> Path:
    return config_path.parent / f".{config_path.name}.run"


def write_run_file(config_path: Path, host: str, port: int) -> None:
    """Where this process serves the room of ``config_path``, replaced atomically."""
    document = {
        "pid": os.getpid(),
        "host": host,
        "port": port,
        "configPath": str(config_path),
        "runtimeScopeKey": runtime_identity.runtime_scope_key(config_path),
    }
    with contextlib.suppress(OSError):  # a read-only folder: the commands fall back on the config
        handle, tmp = tempfile.mkstemp(dir=config_path.parent, prefix=f".{config_path.name}.", suffix=".run.tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(document, file)
        os.replace(tmp, run_file_path(config_path))


def remove_run_file(config_path: Path) -> None:
    """Only this process's own run file: a later runtime of the same config may have replaced it."""
    if (read_run_file(config_path) or {}).get("pid") == os.getpid():
        with contextlib.suppress(OSError):
            run_file_path(config_path).unlink()


def read_run_file(config_path: Path) -> dict[str, Any] | None:
    try:
        document = json.loads(run_file_path(config_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    port = document.get("port") if isinstance(document, dict) else None
    if type(port) is not int or not 1 <= port <= 65535 or document.get("configPath") != str(config_path):
        return None
    return document


def running_target(config_path: Path) -> Target | None:
    """The running room of ``config_path`` as its run file names it, without reading the config
    (the defaults stand in for its other settings); None without a run file of a live process. The
    probe still checks who answers there: a reused pid's port holds no runtime of this config."""
    found = read_run_file(config_path)
    if found is None or not _alive(found.get("pid")):
        return None
    return Target(config_path, GroupXConfig(server=ServerConfig(port=found["port"])))


def _alive(pid: Any) -> bool:
    if type(pid) is not int or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: not ours, but alive
        return True
    return True

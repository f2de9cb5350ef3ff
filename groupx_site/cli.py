"""The ``groupx`` command (FEATURES §2.2): start, stop, restart, init, doctor, version, help, and
``restart-agent`` (one agent's CLI, ``groupx_site/agent_cli.py``).

``start`` is idempotent. Before anything is opened it asks ``GET /api/health`` on the configured
port who is there (PROTOCOL §10.6): the same config's runtime means "already running"; any other
listener is a conflict that GroupX never kills and never dodges by picking another port. The
probe cannot replace the listen itself, so a lost bind (``EADDRINUSE``) is probed again to tell a
concurrent start of the same config (reuse) from a conflict.

``stop`` and ``restart`` talk to the runtime only through ``POST /api/runtime/shutdown`` and only
when the running instance belongs to this config path (PROTOCOL §10.8).

With no config file, ``start`` (and ``init``) write the starter one first (real CLIs on PATH, else
the demo agents) and serve the room at once; ``/setup`` in the running room is where the agents
change (docs/DECISIONS.md D26).

Nothing here imports Django before it must: settings read ``groupx.json`` at import time, so the
starter file has to exist before the first Django import.
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import time
import webbrowser
from dataclasses import dataclass
from pathlib import Path

from groupx_site.console import fail, load_target, say
from groupx_site.port_probe import POLL_SECONDS, REPROBES, Target, conflict_message, running_target
from setup_wizard.config import GroupXConfig, config_path_from_env

UNREACHABLE_IN_A_ROW = 3

USAGE = """\
usage: groupx [command] [--config PATH] [--port PORT] [--no-open] [--split]

commands:
  start     start GroupX for this config (the default command); writes a starter
            config first when the file does not exist (agent CLIs found on PATH,
            else the bundled demo agents)
  stop      stop the running GroupX of this config
  restart   stop it, then start again with the latest config
  restart-agent NAME
            restart one agent's CLI in the running GroupX (its running Turn is
            interrupted; queued Turns run on the new instance)
  init      like start, then open the Agent Settings page (/setup)
  doctor    check this machine: OS, Python, Django, agent CLIs and the config
  manage [--config PATH] COMMAND [ARGS]
            run a management command on this config's room, as manage.py does
            in a checkout (createadmin, replay_events, reset_context, ...)
  version   print the version (also --version, -v)
  help      print this help (also --help, -h)

options:
  --config PATH   the groupx.json to use (default: $GROUPX_CONFIG, else ./groupx.json)
  --port PORT     the port a new starter config listens on (start, init; default 4310)
  --no-open       do not open a browser (start, restart, init)
  --split         start: the web process and the agent worker as two processes
                  over the Redis named by channelLayer.redisUrl (README "Split mode")
"""

OPTIONS = {
    "start": {"--config", "--port", "--no-open", "--split"},
    "restart": {"--config", "--no-open"},
    "init": {"--config", "--port", "--no-open"},
    "stop": {"--config"},
    "restart-agent": {"--config"},
    "doctor": {"--config"},
}


class UsageError(Exception):
    pass


@dataclass
class Invocation:
    command: str
    config: str | None = None
    port: int | None = None
    open_browser: bool = True
    agent: str | None = None  # restart-agent's NAME
    split: bool = False  # start --split (groupx_site/split.py)


def parse_args(argv: list[str]) -> Invocation:
    if argv and argv[0] in {"--version", "-v", "version"}:
        return Invocation("version")
    if argv and argv[0] in {"--help", "-h", "help"}:
        return Invocation("help")
    command = "start"
    if argv and not argv[0].startswith("-"):
        command, argv = argv[0], argv[1:]
        if command not in OPTIONS:
            raise UsageError(f"unknown command: {command}")
    invocation = Invocation(command)
    allowed = OPTIONS[command]
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, _, inline = arg.partition("=")
        if command == "restart-agent" and invocation.agent is None and not arg.startswith("-"):
            invocation.agent, i = arg, i + 1
            continue
        if name not in allowed:
            raise UsageError(f"unknown option for {command}: {arg}")
        if name in {"--config", "--port"}:
            if inline:
                value = inline
            elif i + 1 < len(argv):
                value, i = argv[i + 1], i + 1
            else:
                raise UsageError(f"{name} needs a value")
            if name == "--config":
                invocation.config = value
            else:
                invocation.port = parse_port(value)
        elif inline:
            raise UsageError(f"{name} takes no value")
        elif name == "--split":
            invocation.split = True
        else:
            invocation.open_browser = False
        i += 1
    return invocation


def parse_port(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= 65535:
        raise UsageError(f"--port must be a number from 1 to 65535, not {value!r}")
    return int(value)


def version() -> str:
    from groupx_site.runtime_identity import product_version

    return product_version()


def open_url(url: str) -> bool:
    """Open a browser where there is one; never block or fail where there is none."""
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return False  # headless: a console browser (lynx, w3m) would take over this terminal
    if os.environ.get("CI") or os.environ.get("SSH_CONNECTION") or os.environ.get("SSH_TTY"):
        return False  # a browser on the far side of an SSH session or on a CI runner helps nobody
    if os.environ.get("GROUPX_RESTARTED"):
        return False  # started again from /setup (groupx_site/shutdown.py): the open page reconnects
    try:
        return webbrowser.open(url, new=2)
    except webbrowser.Error:
        return False


# --- commands -----------------------------------------------------------------------------------


def start_race(target: Target, *, open_browser: bool, page: str = "/") -> int:
    """The idempotent start: reuse the same config's runtime, refuse any other listener, else serve.
    ``page`` is where the browser goes: the room, or ``/setup`` for ``groupx init``."""

    def show(origin: str) -> None:
        url = origin + page if page != "/" else origin
        if page != "/":
            say(f"Change the agents at {url}")
        if open_browser and not open_url(url):
            say(f"Open {url} in your browser.")

    def reuse() -> int:
        say(f"GroupX is already running at {target.origin}")
        show(target.origin)
        return 0

    found = target.probe_patiently()
    if found.kind != "unreachable":
        message = conflict_message(found, target)
        return reuse() if message is None else fail(message)

    from groupx_site.serve import serve  # imports Django: only now that the config exists

    def on_ready(origin: str) -> None:
        say(f"GroupX is ready at {origin} (Ctrl+C or `groupx stop` to stop)")
        show(origin)

    result = serve(
        target.config,
        on_listening=lambda origin: say(f"GroupX is starting at {origin} ({target.path})"),
        on_ready=on_ready,
    )
    if result.outcome == "address_in_use":
        # Someone bound between our probe and our listen: a concurrent start of this config is a
        # reuse; anything else is a conflict. No store was opened (at most the starter file written).
        for attempt in range(REPROBES):
            found = target.probe()
            if found.kind == "groupx" and conflict_message(found, target) is None:
                return reuse()
            if attempt < REPROBES - 1:
                time.sleep(POLL_SECONDS)
        if found.kind == "unreachable":
            return fail(f"port {target.port} was taken and released while GroupX was starting; try again.")
        return fail(conflict_message(found, target) or "the port is in use")
    if result.outcome in ("listen_failed", "start_failed"):
        return fail(result.message)
    say("GroupX stopped.")
    return 0


def ensure_config(path: Path, port: int | None) -> Target | None:
    """The config to start: the existing file, or a starter one written now (D26). ``--port`` only
    chooses the port of a new file; it never overrides an existing one, whose runtime identity
    (``groupx stop``, ``restart``) is the file."""
    if not path.exists():
        from setup_wizard.starter import DEFAULT_PORT, describe, write_starter_config

        say(describe(path, write_starter_config(path, port=port or DEFAULT_PORT)))
    target = load_target(path)
    if target is not None and port is not None and port != target.port:
        fail(
            f"{path} already sets server.port {target.port}; --port only applies to a new config. "
            "Change the port at /setup or in the file."
        )
        return None
    return target


def cmd_start(path: Path, open_browser: bool, port: int | None = None, *, split: bool = False) -> int:
    target = ensure_config(path, port)
    if target is None:
        return 1
    if split:
        from groupx_site.split import start_split

        return start_split(target)
    return start_race(target, open_browser=open_browser)


def cmd_init(path: Path, open_browser: bool, port: int | None = None) -> int:
    """The agents change at /setup in the running room; ``init`` gets there from any state: a room
    already running for this config is reused (even one started before the file changed, whose own
    /setup edits the same file), else the room starts (writing a starter config when needed)."""
    if path.exists():
        target = load_target(path)
        if target is not None:
            found = target.probe()
            if found.kind == "groupx" and found.scope_key == target.scope_key:
                say(
                    f"GroupX is running for this config: edit the agents at {target.origin}/setup, "
                    "then run `groupx restart`."
                )
                if open_browser:
                    open_url(f"{target.origin}/setup")
                return 0
    target = ensure_config(path, port)
    return 1 if target is None else start_race(target, open_browser=open_browser, page="/setup")


def stop_budget(config: GroupXConfig) -> float:
    return max(15.0, min(300.0, 3 * config.timeouts.closeMs / 1000 + 1))


def stop_instance(target: Target, *, restarting: bool) -> int:
    found = target.probe_patiently()
    if found.kind == "unreachable":
        if restarting:
            return fail(f"no GroupX instance is running at {target.origin}; start it with `groupx start`.")
        return fail(
            f"no GroupX instance detected at {target.origin}. If server.port changed since it was "
            "started, stop it on its old port first (or press Ctrl+C in its terminal)."
        )
    if found.kind != "groupx":
        return fail(f"port {target.port} is used by a program that is not GroupX; nothing was stopped.")
    if found.runtime_key != target.key and found.scope_key != target.scope_key:
        return fail(f"the GroupX on port {target.port} belongs to another groupx.json; refusing to stop it.")
    status, body = post_shutdown(target, found.scope_key, timeout=stop_budget(target.config))
    if status != 202:
        if status == 404:
            return fail("that GroupX has no shutdown endpoint (an older version?); stop it with Ctrl+C.")
        return fail(f"the shutdown request was refused ({status}): {body}")
    say(f"Stopping GroupX at {target.origin} …")
    return wait_released(target, found.scope_key, stop_budget(target.config))


def post_shutdown(target: Target, scope_key: str | None, *, timeout: float) -> tuple[int, str]:
    # A runtime still starting answers once its start is done, hence the long timeout.
    conn = http.client.HTTPConnection(target.host, target.port, timeout=timeout)
    try:
        payload = json.dumps({"runtimeScopeKey": scope_key})
        conn.request("POST", "/api/runtime/shutdown", body=payload, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, response.read(4096).decode(errors="replace")
    except (OSError, http.client.HTTPException) as error:
        return 0, str(error)
    finally:
        conn.close()


def wait_released(target: Target, scope_key: str | None, budget: float) -> int:
    """Until the port refuses connections 3 times in a row; a different listener there fails closed."""
    deadline = time.monotonic() + budget
    in_a_row = 0
    while time.monotonic() < deadline:
        found = target.probe()
        if found.kind == "unreachable":
            in_a_row += 1
            if in_a_row == UNREACHABLE_IN_A_ROW:
                say("GroupX stopped.")
                return 0
        else:
            in_a_row = 0
            replaced = found.kind == "foreign" or (found.kind == "groupx" and found.scope_key != scope_key)
            if replaced:  # "silent" is a closing runtime too busy to answer: keep waiting
                return fail(f"port {target.port} was taken by another listener while GroupX was stopping.")
        time.sleep(POLL_SECONDS)
    return fail(f"GroupX did not stop within {budget:.0f}s; it is still listening on {target.origin}.")


def cmd_stop(path: Path) -> int:
    if not path.exists():
        return fail(f"no config at {path}; nothing to stop.")
    target = running_target(path) or load_target(path)  # the run file first: the config may not parse (D102)
    return 1 if target is None else stop_instance(target, restarting=False)


def cmd_restart(path: Path, open_browser: bool) -> int:
    if not path.exists():
        return fail(f"no config at {path}; run `groupx start` to write one and start.")
    target = running_target(path) or load_target(path)
    if target is None:
        return 1
    code = stop_instance(target, restarting=True)
    if code != 0:
        return code
    target = load_target(path)  # the latest file, even if it changed while the old one stopped
    if target is None:
        return 1
    # Whatever terminal served the room before, it now runs here: say so, so nobody closes this one.
    say("The room now runs in this terminal: keep it open (Ctrl+C or `groupx stop` stops it).")
    return start_race(target, open_browser=open_browser)


def cmd_manage(argv: list[str]) -> int:
    """``groupx manage [--config PATH] COMMAND ...``: Django's management commands in a tool install,
    where there is no manage.py; the config chooses the room as it does for ``start``."""
    config = None
    if argv and argv[0].startswith("--config"):
        name, _, inline = argv[0].partition("=")
        if name != "--config" or not (inline or len(argv) > 1):
            return fail("usage: groupx manage [--config PATH] COMMAND [ARGS]")
        config, argv = (inline, argv[1:]) if inline else (argv[1], argv[2:])
    if not argv:
        return fail("usage: groupx manage [--config PATH] COMMAND [ARGS] (`groupx manage help` lists them)")
    os.environ["GROUPX_CONFIG"] = str(config_path_from_env(config))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "groupx_site.settings")
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(["groupx manage", *argv])
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "manage":
        return cmd_manage(argv[1:])
    try:
        invocation = parse_args(argv)
    except UsageError as error:
        print(f"groupx: {error}\n\n{USAGE}", file=sys.stderr, end="")
        return 1
    if invocation.command == "help":
        print(USAGE, end="")
        return 0
    if invocation.command == "version":
        print(f"groupx {version()}")
        return 0
    path = config_path_from_env(invocation.config)
    os.environ["GROUPX_CONFIG"] = str(path)  # what Django's settings will read, if this process serves
    if invocation.command == "doctor":
        from groupx_site.doctor_install import install_lines
        from groupx_site.doctor_workers import worker_lines
        from setup_wizard.doctor import run as doctor

        status = doctor(path)
        lines, problems = install_lines(path)
        print("\n".join(lines + worker_lines(path) + [f"problem: {problem}" for problem in problems]))
        return status or (1 if problems else 0)
    if invocation.command == "stop":
        return cmd_stop(path)
    if invocation.command == "restart":
        return cmd_restart(path, invocation.open_browser)
    if invocation.command == "restart-agent":
        from groupx_site.agent_cli import cmd_restart_agent

        return cmd_restart_agent(path, invocation.agent)
    if invocation.command == "init":
        return cmd_init(path, invocation.open_browser, invocation.port)
    return cmd_start(path, invocation.open_browser, invocation.port, split=invocation.split)

"""``groupx doctor`` for agents on other machines (docs/DECISIONS.md D51): for each SSH destination
of the config, is it reachable, is the agent's CLI found there, and which version is it.

One ``ssh`` per agent, in batch mode (never a password prompt) with a short connect timeout and a
hard deadline on the whole probe, so doctor never hangs on a dead host. The probe runs the same
ssh options and ssh config (``GROUPX_SSH_CONFIG``) as the launch, without the port forward.
"""

from __future__ import annotations

import shlex
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from groupx_site.core.ssh_destination import ssh_options
from setup_wizard.config import ResolvedAgent, ssh_config_file

CONNECT_TIMEOUT_S = 5
PROBE_DEADLINE_S = 15.0
SSH_FAILED = 255  # ssh's own exit status: it could not connect or authenticate
NOT_FOUND = 127
# Printed between the CLI's path and its --version output; cannot be mistaken for either.
MARK = "--groupx-version--"


@dataclass(frozen=True)
class SshProbe:
    reachable: bool
    found: bool
    detail: str  # the CLI's path and version, or why not


def probe_script(command: tuple[str, ...]) -> str:
    """Find the executable on the remote PATH (or as given), then ask its version, bounded there too."""
    executable = shlex.quote(command[0])
    version = shlex.join([*command, "--version"])
    return (
        f'p=$(command -v {executable}) || exit {NOT_FOUND}; echo "$p"; echo {MARK}; '
        f"{version} </dev/null 2>&1 | head -n 3"
    )


def probe(agent: ResolvedAgent, *, config_file: str | None = None, deadline_s: float = PROBE_DEADLINE_S) -> SshProbe:
    assert agent.ssh is not None
    argv = [
        "ssh",
        *ssh_options(config_file, connect_timeout_s=CONNECT_TIMEOUT_S),
        "--",
        agent.ssh,
        f"sh -c {shlex.quote(probe_script(agent.command))}",
    ]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=deadline_s)
    except FileNotFoundError:
        return SshProbe(False, False, "no ssh client on this machine (install openssh-client)")
    except subprocess.TimeoutExpired:
        return SshProbe(False, False, f"no answer within {deadline_s:g} s")
    if done.returncode == SSH_FAILED:
        reason = done.stderr.strip().splitlines()
        return SshProbe(False, False, reason[-1][:200] if reason else "ssh failed (exit 255)")
    if done.returncode == NOT_FOUND:
        return SshProbe(True, False, f"{agent.command[0]} not found on the remote PATH")
    path, _, version = done.stdout.partition(f"{MARK}\n")
    first = next((line.strip() for line in version.splitlines() if line.strip()), "")
    return SshProbe(True, True, f"{path.strip()} ({first[:120] or 'no --version output'})")


def ssh_lines(agents: list[ResolvedAgent]) -> tuple[list[str], bool]:
    """One line per remote agent, probed in parallel; and whether every destination answered."""
    remote = [agent for agent in agents if agent.ssh and agent.enabled]
    if not remote:
        return [], True
    config_file = ssh_config_file()
    with ThreadPoolExecutor(max_workers=min(8, len(remote))) as pool:
        probes = list(pool.map(lambda agent: probe(agent, config_file=config_file), remote))
    lines = ["  ssh destinations" + (f" (ssh config {config_file})" if config_file else "") + ":"]
    for agent, found in zip(remote, probes, strict=True):
        state = "reachable" if found.reachable else "UNREACHABLE"
        cli = "" if not found.reachable else (", CLI found" if found.found else ", CLI NOT FOUND")
        lines.append(f"    {agent.actor_id} on {agent.ssh}: {state}{cli}: {found.detail}")
    return lines, all(found.reachable and found.found for found in probes)

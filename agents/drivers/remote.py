"""Running a CLI on another machine through ``ssh`` (docs/DECISIONS.md D51).

``wrap`` turns the argv a driver built into the ``ssh`` argv that runs it on the agent's SSH
destination, in the agent's remote working directory. Nothing of GroupX listens anywhere but
loopback: ``ssh -R`` opens a port on the *remote* machine's loopback whose connections the ssh
client carries back to the room's own loopback port, and the CLI is given that forwarded address
as its MCP URL. Everything else (stdio framing, the handshake, cancel, close) is unchanged: the
ssh client is the child process, its stdin and stdout are the CLI's.

Secrets never go on a command line, here or remotely (D39). A driver whose CLI reads one from a
file (Claude's ``--mcp-config``) names the local ``SecretFile``; the remote script reads each
secret as one line from its stdin, before the CLI starts, into a 0600 file in a fresh ``mktemp -d``
directory on the remote side (removed when the CLI exits), and the CLI's argv names that file.
``preamble`` is what the launcher writes to ssh's stdin first.

Standard library and the ground's pure rules only, like every module of ``agents/drivers``.
"""

from __future__ import annotations

import random
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

# The destination rule is the config's too, so it lives in the ground (D149).
from groupx_site.core.ssh_destination import DESTINATION_RE, ssh_options

# Remote forward ports are picked at random per launch from here: a port still held on the
# remote side by a dropped connection's sshd is simply not picked again (a collision makes ssh
# exit, ExitOnForwardFailure, and the start is retried with another port).
FORWARD_PORTS = (20_000, 59_999)


@dataclass(frozen=True)
class SshTarget:
    destination: str  # user@host or an ssh config alias
    local_port: int  # the room's loopback port
    remote_port: int  # the forwarded port on the remote machine's loopback
    config_file: str | None = None  # ``ssh -F``; None: the user's own ssh config

    @property
    def mcp_origin(self) -> str:
        """Where the CLI on the remote machine reaches the room."""
        return f"http://127.0.0.1:{self.remote_port}"


def pick_remote_port() -> int:
    return random.randint(*FORWARD_PORTS)


def remote_script(argv: Sequence[str], cwd: str, secrets: Sequence[tuple[str, str]] = ()) -> str:
    """The POSIX sh script run remotely: ``cd`` to ``cwd``, read each secret (``(local path, file
    name)``) from stdin into a private file, run ``argv`` with the local paths replaced."""
    if not secrets:
        return f"cd -- {shlex.quote(cwd)} && exec {shlex.join(argv)}"
    remote_paths = {local: f'"$d"/{shlex.quote(name)}' for local, name in secrets}
    command = " ".join(remote_paths.get(arg, shlex.quote(arg)) for arg in argv)
    reads = "; ".join(
        f"IFS= read -r s || exit 66; printf '%s\\n' \"$s\" > {remote_paths[local]}" for local, _name in secrets
    )
    # Not exec'd: the shell stays to remove the directory once the CLI exits.
    return (
        f"cd -- {shlex.quote(cwd)} || exit 66; umask 077; d=$(mktemp -d) || exit 66; "
        f"trap 'rm -rf \"$d\"' EXIT; trap 'exit 143' HUP INT TERM; {reads}; {command}"
    )


def wrap(argv: Sequence[str], cwd: str, target: SshTarget, secrets: Sequence[tuple[str, str]] = ()) -> list[str]:
    """The ssh argv running ``argv`` in ``cwd`` on ``target``, the room's port forwarded."""
    if not DESTINATION_RE.match(target.destination):
        raise ValueError(f"not an ssh destination: {target.destination!r}")
    forward = f"127.0.0.1:{target.remote_port}:127.0.0.1:{target.local_port}"
    script = remote_script(argv, cwd, secrets)
    return [
        "ssh",
        *ssh_options(target.config_file),
        "-o",
        "ExitOnForwardFailure=yes",
        "-R",
        forward,
        "--",
        target.destination,
        f"sh -c {shlex.quote(script)}",
    ]


def preamble(secret_lines: Sequence[str]) -> bytes:
    """What goes to ssh's stdin before the first frame: one line per secret, in ``wrap``'s order."""
    for line in secret_lines:
        if "\n" in line or "\r" in line:
            raise ValueError("a secret sent through ssh must be one line")
    return "".join(f"{line}\n" for line in secret_lines).encode("utf-8")

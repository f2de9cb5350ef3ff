"""A throwaway OpenSSH server on loopback for the remote-agent tier (docs/DECISIONS.md D52).

Everything lives in one temporary directory: a fresh host key, a fresh client key, its own
``authorized_keys``, ``known_hosts`` and ``sshd_config``, and the ``ssh_config`` GroupX is given
through ``GROUPX_SSH_CONFIG`` (the user's own ``~/.ssh`` is never read or written). The "remote
machine" is this one, reached as the current user (root in CI) through sshd on 127.0.0.1 and a
free port; the fake CLIs' test variables travel with ``SendEnv``/``AcceptEnv``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

from tests.server import free_port, wait_until

SSHD = "/usr/sbin/sshd"
ALIAS = "groupx-remote"  # the Host alias agents name in groupx.json
DEAD_ALIAS = "groupx-nowhere"  # an alias whose port nothing listens on


def sshd_binary() -> str | None:
    """Debian's sshd (``make test-remote`` installs openssh-server when missing)."""
    return SSHD if os.access(SSHD, os.X_OK) and shutil.which("ssh") and shutil.which("ssh-keygen") else None


def _keygen(path: Path) -> str:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "groupx-test", "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
    )
    return path.with_suffix(".pub").read_text().strip()


class Sshd:
    def __init__(self, folder: Path):
        self.folder = folder
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.ssh_config = folder / "ssh_config"
        self.log_path = folder / "sshd.log"

    def start(self) -> Sshd:
        folder = self.folder
        host_public = _keygen(folder / "host_key")
        client_public = _keygen(folder / "client_key")
        (folder / "authorized_keys").write_text(client_public + "\n")
        (folder / "known_hosts").write_text(f"[127.0.0.1]:{self.port} {host_public}\n")
        (folder / "sshd_config").write_text(
            "\n".join(
                [
                    f"ListenAddress 127.0.0.1:{self.port}",
                    f"HostKey {folder / 'host_key'}",
                    f"PidFile {folder / 'sshd.pid'}",
                    f"AuthorizedKeysFile {folder / 'authorized_keys'}",
                    "PubkeyAuthentication yes",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PermitRootLogin prohibit-password",
                    "UsePAM no",
                    "StrictModes no",
                    # Remote forwards bind the remote loopback only: what GroupX relies on.
                    "AllowTcpForwarding remote",
                    "GatewayPorts no",
                    "X11Forwarding no",
                    "AcceptEnv GROUPX_FAKE_*",
                    "LogLevel VERBOSE",
                    "",
                ]
            )
        )
        self.ssh_config.write_text(
            "\n".join(
                [
                    f"Host {ALIAS}",
                    "  HostName 127.0.0.1",
                    f"  Port {self.port}",
                    f"  User {_user()}",
                    f"  IdentityFile {folder / 'client_key'}",
                    "  IdentitiesOnly yes",
                    f"  UserKnownHostsFile {folder / 'known_hosts'}",
                    "  GlobalKnownHostsFile /dev/null",
                    "  StrictHostKeyChecking yes",
                    "  SendEnv GROUPX_FAKE_*",
                    f"Host {DEAD_ALIAS}",
                    "  HostName 127.0.0.1",
                    f"  Port {free_port()}",
                    "",
                ]
            )
        )
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege-separation directory
        log = open(self.log_path, "ab")  # noqa: SIM115 - kept open for the process's life
        self.proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(folder / "sshd_config")],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        wait_until(
            lambda: self.proc.poll() is not None or "Server listening" in self.log(),
            timeout=30,
            message="sshd listening",
        )
        assert self.proc.poll() is None, self.log()
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def session_pids(self) -> list[int]:
        """The per-connection sshd processes (children of the listener): killing them drops every
        ssh connection at once, as a network failure would."""
        assert self.proc is not None
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        return [int(pid) for pid in children]

    def drop_connections(self) -> list[int]:
        pids = self.session_pids()
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        return pids

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name

"""A secret handed to a CLI as a file only the server's OS user can read (docs/DECISIONS.md D39).

A child's argv is public on the machine (``/proc/<pid>/cmdline`` is world-readable), so a binding
never goes there: a driver whose CLI takes its MCP server on the command line (Claude's
``--mcp-config``) writes it to a ``SecretFile`` and passes the path instead. Each file lives alone
in a fresh directory (``mkdtemp``: mode 0700) under the room's private directory, is created with
``O_CREAT | O_EXCL | O_NOFOLLOW`` and mode 0600 (so it is never an existing file, nor a planted
link, and is never readable by anyone else, whatever the umask), and goes with its directory when
the session closes. A server killed before that leaves it behind; ``sweep`` removes such leftovers
when the runtime starts.

Standard library only, like every module of ``agents/drivers``.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile

log = logging.getLogger(__name__)

PREFIX = "groupx-"  # the per-file directories; ``sweep`` removes nothing else
FILE_MODE = 0o600
DIRECTORY_MODE = 0o700


class SecretFile:
    def __init__(self, name: str, content: str, *, parent: str | None = None):
        """Write ``content`` to ``<parent>/groupx-XXXX/<name>``; ``parent`` None: the system's temp
        directory (a driver started outside a room, as in the drivers' own tests)."""
        self.name = name
        self.directory = tempfile.mkdtemp(prefix=PREFIX, dir=parent)
        self.path = os.path.join(self.directory, name)
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write(content)
        except BaseException:
            self.remove()
            raise

    def read(self) -> str:
        """The content, for a launcher that hands it on by another private path (remote.py)."""
        with open(self.path, encoding="utf-8") as file:
            return file.read()

    def remove(self) -> None:
        """Idempotent: the file and its directory are gone afterwards (or were never there)."""
        shutil.rmtree(self.directory, ignore_errors=True)


def private_directory(path: str) -> str | None:
    """``path`` as a directory only this OS user may enter (created, or narrowed to 0700). None when
    that cannot be done (a read-only data directory, a link in its place): the files then go to the
    system's temp directory, in their own 0700 directories all the same."""
    try:
        os.makedirs(path, mode=DIRECTORY_MODE, exist_ok=True)
        if os.path.islink(path):
            raise NotADirectoryError(f"{path} is a link")
        os.chmod(path, DIRECTORY_MODE)
    except OSError as error:
        log.warning("secret files go to the system temp directory: %s is not usable (%s)", path, error)
        return None
    return path


def sweep(parent: str) -> int:
    """Remove the files a killed server left in ``parent``; returns how many were removed. Links
    and anything not named by ``SecretFile`` are left alone."""
    removed = 0
    try:
        entries = list(os.scandir(parent))
    except OSError:  # not there yet, or not readable: nothing of ours to sweep
        return 0
    for entry in entries:
        if entry.name.startswith(PREFIX) and entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed += 1
    if removed:
        log.info("removed %d secret file(s) left by an earlier run", removed)
    return removed

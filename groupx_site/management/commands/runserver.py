"""``manage.py runserver``: daphne's ASGI runserver, listening where groupx.json says.

Without an address it binds ``server.host:server.port`` (default 127.0.0.1:4310). It is meant to
just work on a fresh checkout (docs/DECISIONS.md D26):

- an address off loopback (``0.0.0.0:8000``, ``192.168.1.5:80``, ``[::]:8000``) is refused before
  anything is written or bound: GroupX serves loopback only (PROTOCOL, FEATURES §1);
- with no config file it writes the starter one first, and says so;
- pending migrations are applied by the runtime once the port is bound, exactly as ``groupx start``
  does, so a fresh database becomes a ready room instead of ``no such table``;
- the serving child's autoreloader looks at GroupX's own files every second and at the
  interpreter's and the installed packages' every ten (``groupx_site/speedups/reloader.py``, D79).
"""

from __future__ import annotations

import os

from daphne.management.commands.runserver import Command as DaphneRunserver
from django.conf import settings
from django.core.management.base import CommandError
from django.utils import autoreload

from groupx_site import process_runtime
from groupx_site.speedups import reloader
from groupx_site.speedups import switches as speedups_switches
from groupx_site.starter_config import ensure_config

# What ALLOWED_HOSTS accepts, too: another loopback address (127.0.0.2) would bind but then answer
# every request 400 for its Host.
LOOPBACK_ADDRESSES = {"127.0.0.1", "localhost", "::1"}


def refusal(addr: str, port: str) -> str | None:
    if addr in LOOPBACK_ADDRESSES:
        return None
    shown = f"[{addr}]" if ":" in addr else addr
    return (
        f"GroupX listens on loopback only (127.0.0.1, localhost or [::1]), not {shown}:{port}. "
        f"Run `python manage.py runserver 127.0.0.1:{port}`."
    )


class Command(DaphneRunserver):
    help = "Start the GroupX server (ASGI) on the address from groupx.json (loopback only)."

    def handle(self, *args, **options):
        # The defaults of a missing file are the starter file's address, so they can be read now.
        self.default_addr = settings.GROUPX_CONFIG.server.host
        self.default_port = str(settings.GROUPX_CONFIG.server.port)
        return super().handle(*args, **options)  # parses the address, then calls run()

    def run(self, **options):
        # Runs in the autoreloader's parent and again in the child that serves: both check, the
        # first writes the starter file, and only the child's runtime migrates.
        message = refusal(self.addr, self.port)
        if message is not None:
            raise CommandError(message)
        ensure_config(self.stdout)
        process_runtime.migrate_before_start()
        serving_child = os.environ.get(autoreload.DJANGO_AUTORELOAD_ENV) == "true"
        if options["use_reloader"] and serving_child and speedups_switches.is_on("reloader"):
            return reloader.serve(self.inner_run, **options)  # the serving child: D79's reloader
        return super().run(**options)  # the reloader's parent (it restarts the child), or --noreload

    def check_migrations(self):
        """Django would warn "You have N unapplied migrations … run migrate": the runtime applies them
        itself as soon as the port is bound, so the warning would only mislead."""

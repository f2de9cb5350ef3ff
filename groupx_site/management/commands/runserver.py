"""``manage.py runserver``: daphne's ASGI runserver, listening where groupx.json says.

Without an address it binds ``server.host:server.port`` (default 127.0.0.1:4310). When the config
file does not exist yet it writes a starter one first, and says so.
"""

from __future__ import annotations

from daphne.management.commands.runserver import Command as DaphneRunserver
from django.conf import settings

from groupx_site.starter_config import ensure_config


class Command(DaphneRunserver):
    help = "Start the GroupX server (ASGI) on the address from groupx.json."

    def handle(self, *args, **options):
        ensure_config(self.stdout)
        self.default_addr = settings.GROUPX_CONFIG.server.host
        self.default_port = str(settings.GROUPX_CONFIG.server.port)
        return super().handle(*args, **options)

from django.core.management.base import BaseCommand

from groupx_site.starter_config import ensure_config


class Command(BaseCommand):
    help = "Write a starter groupx.json if there is none (real CLIs on PATH first, else demo agents)."

    def handle(self, *args, **options):
        if not ensure_config(self.stdout):
            self.stdout.write("groupx.json already exists; nothing to do.\n")

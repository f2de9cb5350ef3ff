"""``manage.py move_to_postgresql postgresql://127.0.0.1/groupx``: the room of this groupx.json,
from its SQLite file into an empty PostgreSQL database (groupx_site/management/room_move.py, D54).
Stop the room first; afterwards name the URL as ``storage.url`` in groupx.json."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from groupx_site.management.room_move import MoveRefused, move
from setup_wizard.config import check_postgresql_url


class Command(BaseCommand):
    help = "Copy this room from SQLite into an empty PostgreSQL database, then check counts and the log's hash."

    def add_arguments(self, parser):
        parser.add_argument("url", help="postgresql://127.0.0.1[:port]/dbname or postgresql:///dbname?host=/socket/dir")

    def handle(self, *args, url: str, **options):
        try:
            check_postgresql_url(url)
            report = move(url, lock_timeout_ms=settings.GROUPX_BUSY_TIMEOUT_MS)
        except (ValueError, MoveRefused) as error:
            raise CommandError(str(error)) from error
        for table, count in sorted(report["tables"].items()):
            self.stdout.write(f"{table}: {count} rows\n")
        self.stdout.write(f"log: {report['events']} events, sha256 {report['logHash']} on both sides\n")
        self.stdout.write(f'moved. Now set "storage": {{"url": "{url}"}} in groupx.json.\n')

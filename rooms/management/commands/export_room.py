"""Write the room's messages (or a time range of them) as Markdown: the same renderer as the
page's Export button (``rooms/export.py``), read page by page."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from groupx_site.core.errors import GroupXError
from rooms import export


class Command(BaseCommand):
    help = "Export the room's messages as Markdown, in seq order, optionally only those in [--from, --to)."

    def add_arguments(self, parser):
        parser.add_argument("--from", dest="start", help="ISO 8601 date or date-time (UTC without a zone); inclusive")
        parser.add_argument("--to", dest="end", help="ISO 8601 date or date-time (UTC without a zone); exclusive")
        parser.add_argument("--output", "-o", help="write to this file instead of standard output")

    def handle(self, *args, start, end, output, **options):
        try:
            moments = export.parse_range(start, end)
        except GroupXError as error:
            raise CommandError(error.message) from error
        chunks = export.markdown(moments, timezone.now())
        if not output:
            for chunk in chunks:
                self.stdout.write(chunk, ending="")
            return
        path = Path(output)
        with path.open("w", encoding="utf-8") as file:
            for chunk in chunks:
                file.write(chunk)
        self.stderr.write(f"Wrote {path}")

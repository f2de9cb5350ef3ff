"""Print the durable log as JSON lines (public envelopes, seq order), from a seq onwards."""

from django.core.management.base import BaseCommand

from groupx_site.core.text import json_text
from rooms.events import ENVELOPE_FIELDS, envelope_from_row
from rooms.models import Event


class Command(BaseCommand):
    help = "Print durable events after --after-seq as JSON lines, optionally filtered by type and correlation."

    def add_arguments(self, parser):
        parser.add_argument("--after-seq", type=int, default=0, help="print events with seq greater than this")
        parser.add_argument(
            "--type",
            action="append",
            dest="types",
            default=[],
            help="only this event type (repeatable); a trailing * matches a prefix, e.g. turn.*",
        )
        parser.add_argument("--correlation", help="only events of this correlation or root correlation")
        parser.add_argument("--limit", type=int, default=0, help="stop after this many events (0: no limit)")

    def handle(self, *args, after_seq, types, correlation, limit, **options):
        if after_seq < 0:
            self.stderr.write("--after-seq must be >= 0")
            raise SystemExit(2)
        printed, cursor = 0, after_seq
        while True:
            query = Event.objects.filter(seq__gt=cursor).order_by("seq")
            rows = list(query.values(*ENVELOPE_FIELDS)[:1000])
            if not rows:
                return
            for row in rows:
                cursor = row["seq"]
                if not self._wanted(row, types, correlation):
                    continue
                self.stdout.write(json_text(envelope_from_row(row)))
                printed += 1
                if limit and printed >= limit:
                    return

    @staticmethod
    def _wanted(row, types, correlation) -> bool:
        if correlation and correlation not in (row["correlation_id"], row["root_correlation_id"]):
            return False
        if not types:
            return True
        kind = row["event_type"]
        return any(kind.startswith(t[:-1]) if t.endswith("*") else kind == t for t in types)

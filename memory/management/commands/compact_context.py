"""Compact the room's context now (PROTOCOL §10.5): keep the last 12 room messages verbatim and
roll everything before them into the checkpoint summary, through the same engine, checks and
compare-and-set as ``POST /api/context/compact``. The summariser is the first enabled agent in
config order that answers, run from this process in a short-lived, MCP-free session."""

import asyncio
import json
import uuid

from django.core.management.base import BaseCommand, CommandError

from groupx_site.core.errors import GroupXError
from groupx_site.core.ids import OPERATOR_BINDING_ID
from memory.engine import compact_command


class Command(BaseCommand):
    help = "Compact all but the last 12 room messages into the checkpoint summary."

    def add_arguments(self, parser):
        parser.add_argument(
            "--client-command-id",
            default=None,
            help="idempotency key; repeating it replays the first result (default: a new one)",
        )
        parser.add_argument("--json", action="store_true", help="print the result as JSON")

    def handle(self, *args, client_command_id, json: bool, **options):
        payload = {"clientCommandId": client_command_id or f"cli-compact-{uuid.uuid4()}"}
        try:
            # Agent health lives in the server process; from here every enabled agent may summarise.
            result = asyncio.run(compact_command(OPERATOR_BINDING_ID, payload, require_healthy=False))
        except GroupXError as error:
            raise CommandError(f"{error.code}: {error.message}") from error
        usage = result["usage"]
        if json:
            self.stdout.write(_dumps(result))
        elif result["compacted"]:
            self.stdout.write(
                f"compacted: summary now covers through seq {usage.get('summaryThroughSeq')}; "
                f"{usage['uncompactedMessageCount']} messages kept verbatim; usage "
                f"{usage['estimatedCharacters']}/{usage['maxCharacters']} characters"
            )
        else:
            self.stdout.write(f"nothing to compact: {usage['uncompactedMessageCount']} messages (12 are kept)")


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False)

"""Move the room's context floor to now (FEATURES §14 "Reset"): later packets, usage and
compaction ignore everything up to the current high-water mark. The transcript is kept.

``--native`` also makes every agent forget its CLI's own history: the running server closes each
agent's native session before that agent's next Turn, which starts on a fresh one (D41)."""

import json
import uuid

from django.core.management.base import BaseCommand, CommandError

from groupx_site.core.errors import GroupXError
from groupx_site.core.ids import OPERATOR_BINDING_ID
from memory.engine import reset_context


class Command(BaseCommand):
    help = "Reset the room's context floor to the current seq (writes a durable context.reset)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--client-command-id",
            default=None,
            help="idempotency key; repeating it replays the first result (default: a new one)",
        )
        parser.add_argument(
            "--native",
            action="store_true",
            help="also close every agent's native CLI session; the next Turn starts a fresh one",
        )
        parser.add_argument("--json", action="store_true", help="print the result as JSON")

    def handle(self, *args, client_command_id, native: bool, json: bool, **options):
        payload = {"clientCommandId": client_command_id or f"cli-reset-{uuid.uuid4()}", "resetNativeSessions": native}
        try:
            # The command line is the machine's operator, like the operator binding.
            result = reset_context(OPERATOR_BINDING_ID, "operator", payload)
        except GroupXError as error:
            raise CommandError(f"{error.code}: {error.message}") from error
        if json:
            self.stdout.write(_dumps(result))
        elif result["reset"]:
            sessions = "; every agent starts a fresh native session" if native else ""
            self.stdout.write(
                f"context reset: floor moved to seq {result['throughSeq']}; "
                f"usage now {result['usage']['estimatedCharacters']} characters{sessions}"
            )
        else:
            self.stdout.write(f"nothing to reset: no room message after the floor (seq {result['throughSeq']})")


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False)

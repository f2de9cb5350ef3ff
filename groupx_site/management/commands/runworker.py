"""``manage.py runworker groupx-agents``: the agents' worker of split mode (``groupx_site/worker.py``,
docs/DECISIONS.md D45). Channels' command with our worker class, which starts the consumer at once
and runs the agents under the lease; a worker that lost its lease ends with an error."""

from __future__ import annotations

from channels.management.commands.runworker import Command as ChannelsRunworker
from django.core.management.base import CommandError

from groupx_site.worker import AgentsWorker, LeaseLostError


class Command(ChannelsRunworker):
    worker_class = AgentsWorker

    def handle(self, *args, **options):
        try:
            super().handle(*args, **options)
        except LeaseLostError as error:
            raise CommandError(str(error)) from None

"""``manage.py runworker groupx-agents [--agents a,b]``: the agents' worker of split mode
(``groupx_site/split_worker.py``, docs/DECISIONS.md D45, D58). Channels' command with our worker class,
which starts the consumer at once and runs the agents under their leases; a worker that lost its
lease ends with an error. ``--agents`` names the agents this worker runs (agent ids or actor ids);
without it, every agent."""

from __future__ import annotations

import functools

from channels.management.commands.runworker import Command as ChannelsRunworker
from django.conf import settings
from django.core.management.base import CommandError

from groupx_site.split_worker import AgentsWorker, LeaseLostError
from setup_wizard import roster

NEEDS_SHARED_STORE = (
    "--agents needs split mode on PostgreSQL: groupx.json must name a Redis channel layer "
    "(channelLayer.redisUrl: the web processes wake every worker through it) and PostgreSQL storage "
    "(storage.url: several worker processes write the room at once, and SQLite takes one writer at a "
    "time, so its lock waits would stall or fail their Turns). Without --agents one worker runs every agent."
)


def chosen_agents(text: str) -> list[str]:
    """The actor ids ``--agents`` names (``kimi`` or ``agent:kimi``), or a refusal naming the unknown
    ones and the room's agents."""
    config = settings.GROUPX_CONFIG
    if config.channelLayer is None or not config.storage.url:
        raise CommandError(NEEDS_SHARED_STORE)
    live = {agent.agent_id: agent.actor_id for agent in roster.live_agents()}
    known = {**live, **{actor_id: actor_id for actor_id in live.values()}}
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise CommandError(
            f"--agents names no agent of this room: {', '.join(unknown) or '(empty)'}; "
            f"its agents are {', '.join(sorted(live)) or 'none'} (groupx.json, enabled ones)"
        )
    return sorted({known[name] for name in names})


class Command(ChannelsRunworker):
    worker_class = AgentsWorker

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument(
            "--agents",
            default=None,
            help="the agents this worker runs, comma-separated (agent ids or actor ids); "
            "default: all. Needs Redis and PostgreSQL.",
        )

    def handle(self, *args, **options):
        if options.get("agents") is not None:
            self.worker_class = functools.partial(AgentsWorker, agents=chosen_agents(options["agents"]))
        try:
            super().handle(*args, **options)
        except LeaseLostError as error:
            raise CommandError(str(error)) from None

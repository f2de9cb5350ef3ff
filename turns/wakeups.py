"""Commit-time wake-ups from the turn actions to whoever runs the lanes.

``turns`` never talks to a subprocess; after the transaction commits it says "these agents have new
work" or "this turn was asked to cancel" on the channel layer, to the agent runtime's consumer
(``agents/channel_consumer.py``), in this process or in the agent worker (split mode, docs/DECISIONS.md D43).
A wake-up the layer loses only delays: the lanes read their queue from the table.
"""

from __future__ import annotations

from collections.abc import Iterable

from groupx_site.store import layer


def new_work_on_commit(actor_ids: Iterable[str]) -> None:
    layer.wake_agents_on_commit({"type": "agents.wake", "actorIds": sorted(set(actor_ids))})


def cancel_on_commit(turn_id: str) -> None:
    layer.wake_agents_on_commit({"type": "agents.cancel", "turnId": turn_id})

"""Commit-time hooks from the turn actions to whoever runs the lanes.

``turns`` never talks to a subprocess; it only says "these agents have new work" or "this turn was
asked to cancel" after the transaction commits. The agent runtime registers the receivers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.db import transaction

_lane_receivers: list[Callable[[list[str]], None]] = []
_cancel_receivers: list[Callable[[str], None]] = []


def on_new_work(receiver: Callable[[list[str]], None]) -> None:
    _lane_receivers.append(receiver)


def on_cancel(receiver: Callable[[str], None]) -> None:
    _cancel_receivers.append(receiver)


def clear() -> None:
    _lane_receivers.clear()
    _cancel_receivers.clear()


def new_work_on_commit(actor_ids: Iterable[str]) -> None:
    actor_ids = sorted(set(actor_ids))
    transaction.on_commit(lambda: [receiver(actor_ids) for receiver in list(_lane_receivers)])


def cancel_on_commit(turn_id: str) -> None:
    transaction.on_commit(lambda: [receiver(turn_id) for receiver in list(_cancel_receivers)])

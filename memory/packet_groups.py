"""The Context Packet's optional memory and identity groups (FEATURES §14), read only as far as the
packet takes them.

A group is the records one section may show, newest first: the agent's core and dated memory, public
memory (the room's and the source's correlations'), and identity about the agent written by itself,
by a user, or by anyone else. The packet looks at no more than ``GROUP_FETCH_CAP`` records of a
group and counts the rest as omitted.

The usual packet finds a handful of records: one read per table (memory/sql.py: ``packet_memory``,
``packet_identity``) holds every record of every group, split here by Python predicates, and each
total is a list's length. When a table holds more than that read's cap, each of its groups is read
on its own, a page at a time, as the packet consumes it; the packet stops consuming once its budget
cannot hold even the smallest entry, and a group it did not read to the end is counted with one
COUNT. So a room with 10,000 memory items costs the records a packet shows, not the table
(docs/DECISIONS.md D62). Either way a group yields the same records in the same order.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from memory import sql as memory_sql
from rooms.models import ROOM_ID

GROUP_FETCH_CAP = 500  # records per optional group looked at; the rest cannot fit anyway
FIRST_PAGE = 32  # a group's first read past the table's one read; each next one doubles

# (the group's statement in memory/sql.py, its parameters)
Stream = tuple[str, list]


def is_user_author(author: str) -> bool:
    # What SQLite's LIKE 'user:%' matches (and memory/sql.py's user-author test): ASCII case-insensitive.
    prefix = author[:5]
    return prefix.isascii() and prefix.lower() == "user:"


@dataclass(frozen=True)
class GroupSpec:
    section: str
    table: str  # "memory" or "identity"
    keeps: Callable  # the group's filter as a predicate on a row of its table's one-read union
    streams: tuple[Stream, ...]  # the group read on its own: merged newest first


def optional_groups(me: str, correlations: set[str]) -> dict[str, GroupSpec]:
    """Every optional group but the unread transcript, in priority order after core memory."""

    def agent_memory(kind: str) -> GroupSpec:
        return GroupSpec(
            f"agent_{kind}_memory",
            "memory",
            lambda r: r.scope_type == "agent" and r.scope_id == me and r.agent_memory_type == kind,
            (("agent_memory", [me, kind]),),
        )

    return {
        "core": agent_memory("core"),
        "dated": agent_memory("dated"),
        "public": GroupSpec(
            "public_memory",
            "memory",
            lambda r: (
                (r.scope_type == "room" and r.scope_id == ROOM_ID)
                or (r.scope_type == "correlation" and r.scope_id in correlations)
            ),
            (
                ("scope_memory", ["room", ROOM_ID]),
                *(("scope_memory", ["correlation", c]) for c in sorted(correlations)),
            ),
        ),
        "self": GroupSpec(
            "self_identity", "identity", lambda r: r.author_actor_id == me, (("self_identity", [me, me]),)
        ),
        "user": GroupSpec(
            "user_authored_identity",
            "identity",
            lambda r: is_user_author(r.author_actor_id),
            (("user_identity", [me]),),
        ),
        "observed": GroupSpec(
            "observed_identity",
            "identity",
            lambda r: r.author_actor_id != me and not is_user_author(r.author_actor_id),
            (("observed_identity", [me, me]),),
        ),
    }


class Group:
    """One group's records, newest first, at most ``GROUP_FETCH_CAP``; ``total()`` once done.

    ``newest`` are its records among the table's newest (the one read): all of them when that read
    held the whole table, else the group's records down to ``below``, the oldest id that read
    reached; the rest comes from ``streams``, read below it as the packet consumes it."""

    def __init__(self, newest: list, streams: tuple[Stream, ...] = (), below: int | None = None) -> None:
        self._newest, self._streams, self._below = newest, streams, below
        self._read_to_the_end = below is None

    def records(self) -> Iterator:
        if self._below is None:
            yield from self._newest
            return
        wanted = GROUP_FETCH_CAP - len(self._newest)
        older = heapq.merge(
            *(_newest_first(*stream, below=self._below, wanted=wanted) for stream in self._streams),
            key=lambda r: r.id,
            reverse=True,
        )
        for looked, record in enumerate(itertools.chain(self._newest, older), start=1):
            yield record
            if looked == GROUP_FETCH_CAP:
                return
        self._read_to_the_end = True

    def total(self, looked_at: int) -> int:
        """All of the group's records, given how many ``records()`` yielded."""
        if self._below is None:
            return len(self._newest)
        if self._read_to_the_end:
            return looked_at
        return sum(memory_sql.group_count(*stream) for stream in self._streams)


def _newest_first(group: str, params: list, *, below: int, wanted: int) -> Iterator:
    """Up to ``wanted`` records of one statement with an id below ``below``, newest first, in pages
    that double from ``FIRST_PAGE``: a packet that stops early has read little past its stop."""
    limit = FIRST_PAGE
    while wanted > 0:
        page = memory_sql.group_page(group, params, below_id=below, limit=min(limit, wanted))
        yield from page
        if len(page) < min(limit, wanted):
            return
        below, wanted, limit = page[-1].id, wanted - len(page), limit * 2


def fetch_groups(
    me: str, groups: dict[str, GroupSpec], correlations: set[str], tables: dict[str, bool] | None = None
) -> dict[str, Group]:
    """A ``Group`` per key, from the table's one read when it held the whole table's share, else
    continued below it as the packet goes."""
    return split_groups(groups, read_tables(me, correlations, tables or {"memory": True, "identity": True}))


def read_tables(me: str, correlations: set[str], tables: dict[str, bool]) -> dict[str, list]:
    """Each table's one read (newest first, one row past the cap); a table known to hold no
    record of these groups (``tables``: False; the packet's prelude says so) is not read."""
    return {
        "memory": memory_sql.packet_memory(
            actor_id=me, room_id=ROOM_ID, correlations=correlations, limit=GROUP_FETCH_CAP + 1
        )
        if tables["memory"]
        else [],
        "identity": memory_sql.packet_identity(actor_id=me, limit=GROUP_FETCH_CAP + 1) if tables["identity"] else [],
    }


def split_groups(groups: dict[str, GroupSpec], unions: dict[str, list]) -> dict[str, Group]:
    """A fresh ``Group`` per key from the tables' one reads: its records there, and when a read
    did not hold the whole table, the rest read below it as the packet goes."""
    fetched = {}
    for key, spec in groups.items():
        rows = unions[spec.table]
        newest = [r for r in rows if spec.keeps(r)]
        fetched[key] = Group(newest) if len(rows) <= GROUP_FETCH_CAP else Group(newest, spec.streams, rows[-1].id)
    return fetched

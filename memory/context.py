"""The Context Packet (FEATURES §14): what an agent is told when it is woken.

Sections, always in this order and the same for every driver (FEATURES §14): ``[groupx_protocol]``,
``[supervision_watch]`` (an observer's Watch Turn only), ``[configured_agent_identity]``, ``[self_identity]``, ``[user_authored_identity]``,
``[observed_identity]``, ``[agent_core_memory]``, ``[agent_dated_memory]``, ``[public_memory]``,
``[room_checkpoint_summary]``, ``[room_delta_since_cursor]``, ``[reply_chain]`` and
``[current_message]`` last, followed by nothing but the message text (the CLIs' fakes and humans
read what follows that marker).

Mandatory: the protocol header, the configured identity, the active summary when it covers past
the agent's cursor, the reply chain and the current message; if they alone exceed the hard
ceiling the Turn fails with CONTEXT_BUDGET_EXCEEDED. Optional parts fill the given budget
greedily in priority order: core memory, unread messages (newest first, without gaps, then shown
in seq order), dated memory, public memory, self, user-authored and observed identity. What does
not fit is counted as omitted; ``memory.engine`` decides whether omitted unread messages call for
a compaction. Only room context messages and memory data enter a packet, never reasoning or tool
records.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings

from groupx_site.core.text import repair
from memory import sql as memory_sql
from memory.packet_groups import Group, GroupSpec, optional_groups, read_tables, split_groups
from memory.sql import IdentityRow, MemoryRow
from memory.transcript import WATCH_BRIEF_KIND, entry, summary_block
from rooms.models import ROOM_ID, Event
from setup_wizard.config import ResolvedAgent

SCHEMA = "groupx.context/0.4"
REPLY_CHAIN_DEPTH = 64
ROUTING_NOTE = (
    "Every message in this room is visible to everyone in it. Only the agents a message names in its "
    "`to` list are woken; writing @name in text does not wake anyone. Your final answer to this turn is "
    "posted to the room automatically as your reply. To wake another agent, ask it and wait for its "
    "answer, publish progress without waking anyone, or read what happened since this packet was "
    "built, use the GroupX MCP tools (send, ask, collect, publish, read) when they are available."
)
# An observer's packet (FEATURES §12, §14): its current message is the watch brief, never the task.
WATCH_NOTE = (
    "You were woken to observe, not to do the task. Call watch to wait for a worker's next milestone "
    "(or until=terminal); each answer is a snapshot: status, public message excerpts, tool names. Call "
    "steer with a public reason to redirect a worker: nudge queues your guidance after its current Turn, "
    "interrupt cancels its whole current Turn first. Sending or asking the worker you observe is refused; "
    "read still works. Steering approves nothing and changes no worker setting."
)
ORDER = (
    "groupx_protocol",
    "supervision_watch",
    "configured_agent_identity",
    "self_identity",
    "user_authored_identity",
    "observed_identity",
    "agent_core_memory",
    "agent_dated_memory",
    "public_memory",
    "room_checkpoint_summary",
    "room_delta_since_cursor",
    "reply_chain",
    "current_message",
)


class ContextBudgetExceeded(Exception):
    pass


@dataclass(frozen=True)
class ContextPacket:
    text: str
    through_seq: int  # the current message's seq: what a delivered attempt moves the cursor to
    after_seq: int  # the lower bound of the unread transcript
    omitted: int | None  # optional items left out, all groups; None: unread left out, not counted
    omitted_unread: int | None = 0  # None: a probe's (count_omitted=False) unread left out, not counted
    newest_omitted_seq: int | None = None  # the newest unread message left out: compaction goes this far
    summary_through_seq: int | None = None  # the checkpoint embedded in this packet, if any
    # The room's active summary (its id, or None) and reset floor when this packet was read: a
    # compaction or a reset since then makes it stale (``memory.engine.checkpoint_moved``).
    checkpoint: tuple[str | None, int] = (None, 0)


def soft_target(max_characters: int) -> int:
    """FEATURES §14: min(max, max(1,024, floor(0.75 × max)))."""
    return min(max_characters, max(1_024, (max_characters * 3) // 4))


class _Sections:
    """Section texts in the fixed order, with the exact cost of adding one more entry."""

    def __init__(self) -> None:
        self.parts: dict[str, list[str]] = {name: [] for name in ORDER}

    def render(self) -> str:
        return "\n\n".join(f"[{name}]\n" + "\n".join(items) for name, items in self.parts.items() if items)

    def cost(self, name: str, item: str) -> int:
        # A new section adds "\n\n[name]\n"; another item in a section adds "\n".
        return len(item) + (1 if self.parts[name] else len(name) + 5)

    def add(self, name: str, item: str) -> None:
        self.parts[name].append(item)


def _reply_chain(source: dict, floor: int) -> list[dict]:
    chain, seen, parent = [], {source["event_id"]}, source["reply_to_event_id"]
    while parent and parent not in seen and len(chain) < REPLY_CHAIN_DEPTH:
        seen.add(parent)
        event = memory_sql.packet_parent(parent, floor)
        if event is None:
            break
        chain.append(event)
        parent = event["reply_to_event_id"]
    chain.reverse()
    return chain


def _watch_section(source: dict) -> str | None:
    """The pair an observer watches, read from its watch brief (the Turn's source)."""
    body = source["body"] or {}
    if body.get("kind") != WATCH_BRIEF_KIND:
        return None
    workers = "\n".join(f"- worker {w.get('actorId')} turn {w.get('turnId')}" for w in body.get("workers", []))
    return (
        f"pair: {body.get('pairId')}\nmode: live_steer\ntask_event_id: {body.get('sourceEventId')}\n"
        f"{workers}\nnote: {WATCH_NOTE}"
    )


def _memory_entry(record: MemoryRow, names: dict[str, str]) -> str:
    return (
        f"- id={record.memory_id} author={record.author_actor_id} "
        f"name={names.get(record.author_actor_id, record.author_actor_id)!r} "
        f"subject={record.subject_actor_id or '-'} source={record.source_kind} kind={record.kind} "
        f"scope={record.scope_type}({record.scope_id}) created={record.created_at:%Y-%m-%d}\n{record.content}"
    )


def _identity_entry(record: IdentityRow, names: dict[str, str]) -> str:
    return (
        f"- id={record.identity_id} author={record.author_actor_id} "
        f"name={names.get(record.author_actor_id, record.author_actor_id)!r} "
        f"subject={record.subject_actor_id} source={record.source_kind} kind={record.kind}\n{record.content}"
    )


# The least an entry can cost (every field empty; a separator at least): once the budget left is
# smaller, a group's remaining records are omitted without being read.
SMALLEST_MEMORY = (
    len(_memory_entry(MemoryRow(0, "", "", "", None, "", "", None, "", datetime(2000, 1, 1, tzinfo=UTC), ""), {})) + 1
)
SMALLEST_IDENTITY = len(_identity_entry(IdentityRow(0, "", "", "", "", "", ""), {})) + 1


def _correlations(source: dict) -> set[str]:
    # The ORM drops None from an __in list; the predicates must too.
    return {source["correlation_id"], source["root_correlation_id"]} - {None}


class PacketReads:
    """What a packet reads from the store, read once however many budgets it is composed for
    (``memory.engine.packet_if_it_fits`` composes one at the soft target, then, when that leaves
    out only memory and identity, one at the hard ceiling: the same reads, D71). The optional
    parts are read as the first composition reaches them, in the order it does; a later one
    takes them from here, and reads further only where the first stopped (a paged group, or
    unread messages past its budget)."""

    def __init__(self, agent: ResolvedAgent, source_event_id: str) -> None:
        self.agent = agent
        hard = settings.GROUPX_CONFIG.limits.contextCharacters
        # The source, the cursor, the floor and the active summary in one statement (memory/sql.py):
        # what turns.lifecycle.delivery_cursor, reset_floor and active_summary(floor) would return.
        prelude = memory_sql.packet_prelude(actor_id=agent.actor_id, room_id=ROOM_ID, source_event_id=source_event_id)
        if prelude is None:
            raise Event.DoesNotExist("Event matching query does not exist.")
        source, cursor, floor, summary = prelude.source, prelude.cursor, prelude.floor, prelude.summary
        if summary is not None and summary.through_seq <= floor:
            summary = None  # a checkpoint at or below the reset floor is not active (active_summary)
        embedded = summary if summary is not None and summary.through_seq > cursor else None
        after_seq = max(cursor, floor, summary.through_seq if summary else 0)
        chain = _reply_chain(source, floor)
        self.source, self.embedded, self.after_seq = source, embedded, after_seq
        self.checkpoint = (summary.summary_id if summary is not None else None, floor)

        sections = _Sections()
        protocol = [
            f"schema: {SCHEMA}",
            "room: room:main",
            f"target: {agent.actor_id}",
            f"after_seq: {after_seq}",
            f"through_seq: {source['seq']}",
            f"current_event_id: {source['event_id']}",
            f"current_author: {source['actor_id']} ({source['actor_display_name']})",
        ]
        if embedded is not None:
            protocol.append(f"summary_through_seq: {embedded.through_seq}")
        if floor:
            protocol.append(f"reset_floor_seq: {floor}")
        sections.add("groupx_protocol", "\n".join([*protocol, f"routing: {ROUTING_NOTE}"]))
        if watch := _watch_section(source):
            sections.add("supervision_watch", watch)
        if agent.identity:
            sections.add("configured_agent_identity", agent.identity)
        if embedded is not None:
            sections.add("room_checkpoint_summary", summary_block(embedded))
        for event in chain:
            sections.add("reply_chain", entry(event))
        sections.add("current_message", str((source["body"] or {}).get("content", "")))
        self.mandatory = {name: items for name, items in sections.parts.items() if items}
        self.mandatory_used = len(sections.render())
        if self.mandatory_used > hard:
            raise ContextBudgetExceeded(
                f"the mandatory context is {self.mandatory_used} characters; the budget is {hard}"
            )

        # The prelude said whether either table holds a record for this packet: most rooms hold
        # none, and then there is nothing to read, show or count in any optional group (D71).
        self.correlations = _correlations(source)
        self.tables = {"memory": prelude.any_memory, "identity": prelude.any_identity}
        self._unions: dict[str, list] | None = None
        self._names: dict[str, str] | None = None
        # context_events() between the cursor and the source, minus the reply chain, newest first: a
        # fixed statement (memory/sql.py; the ORM spent ~450 µs building it).
        self.unread_range = {
            "room_id": ROOM_ID,
            "after_seq": after_seq,
            "before_seq": source["seq"],
            "excluded": [e["event_id"] for e in chain],
        }
        self._unread_read: list[dict] = []
        self._unread_rest = None

    def groups(self) -> tuple[dict[str, GroupSpec], dict[str, Group]]:
        """The optional groups that may hold records, and each one's records (fresh ``Group``s for
        each composition, from the tables' one read each)."""
        if not any(self.tables.values()):
            return {}, {}
        groups = optional_groups(self.agent.actor_id, self.correlations)
        if self._unions is None:
            self._unions = read_tables(self.agent.actor_id, self.correlations, self.tables)
        return groups, split_groups(groups, self._unions)

    def names(self) -> dict[str, str]:
        """Author names, read when the first record is shown."""
        if self._names is None:
            self._names = memory_sql.actor_names()
        return self._names

    def unread(self):
        """The unread messages newest first, as entry dicts: those read before, then on."""
        yield from self._unread_read
        if self._unread_rest is None:
            self._unread_rest = memory_sql.packet_unread(**self.unread_range)
        for event in self._unread_rest:
            self._unread_read.append(event)
            yield event

    def stop_unread(self) -> None:
        """A composition stopped reading the unread messages: their statement ends now, as it
        did before the reads were kept (its cursor must not stay open through the COUNT and the
        later groups). A later composition reads them again from the start."""
        if self._unread_rest is not None:
            self._unread_rest.close()
        self._unread_read, self._unread_rest = [], None


def build_context_packet(
    agent: ResolvedAgent, source_event_id: str, *, budget: int | None = None, count_omitted: bool = True
) -> ContextPacket:
    """The packet for ``agent`` woken by ``source_event_id``, optional parts filling ``budget``
    (default: the hard ceiling ``limits.contextCharacters``). ``count_omitted=False``: a probe
    whose packet is used only if it leaves no unread message out (``memory.engine``); when it does
    leave some out they are not counted (``omitted`` and ``omitted_unread`` are None)."""
    return compose_packet(PacketReads(agent, source_event_id), budget=budget, count_omitted=count_omitted)


def compose_packet(reads: PacketReads, *, budget: int | None = None, count_omitted: bool = True) -> ContextPacket:
    """``build_context_packet`` from reads already made (``PacketReads``)."""
    hard = settings.GROUPX_CONFIG.limits.contextCharacters
    budget = min(budget or hard, hard)
    source, embedded, after_seq = reads.source, reads.embedded, reads.after_seq
    sections = _Sections()
    for name, items in reads.mandatory.items():
        sections.parts[name] = list(items)
    used = reads.mandatory_used

    groups, fetched = reads.groups()
    omitted = 0

    def fill(key: str) -> None:
        nonlocal used, omitted
        if key not in groups:
            return  # no record of this group exists: none taken, none omitted
        section, kind = groups[key].section, groups[key].table
        render, smallest = (
            (_memory_entry, SMALLEST_MEMORY) if kind == "memory" else (_identity_entry, SMALLEST_IDENTITY)
        )
        taken, looked = [], 0
        records = fetched[key].records()
        for record in records:
            if budget - used < smallest:
                break  # no entry of this kind can fit any more: the rest is omitted unread
            looked += 1
            item = render(record, reads.names())
            cost = sections.cost(section, item) if not taken else len(item) + 1
            if used + cost <= budget:
                taken.append(item)
                used += cost
        records.close()
        for item in reversed(taken):  # chosen newest first, shown oldest first
            sections.add(section, item)
        omitted += fetched[key].total(looked) - len(taken)

    fill("core")
    unread, newest_omitted = [], None
    for event in reads.unread():
        item = entry(event)
        cost = sections.cost("room_delta_since_cursor", item) if not unread else len(item) + 1
        if used + cost > budget:
            newest_omitted = event["seq"]  # everything older is left out too: no gaps in history
            reads.stop_unread()
            break
        unread.append(item)
        used += cost
    # Without a stop every unread row was read, so the total is known; COUNT only when the budget
    # stopped the loop, and not for a probe, which is then thrown away for a compaction: the COUNT
    # reads the whole unread range (~0.5 s at 1,000,000 unread events, on the writer thread, D62).
    omitted_unread: int | None = 0
    if newest_omitted is not None:
        omitted_unread = memory_sql.packet_unread_count(**reads.unread_range) - len(unread) if count_omitted else None
    for item in reversed(unread):
        sections.add("room_delta_since_cursor", item)
    for key in ("dated", "public", "self", "user", "observed"):
        fill(key)

    return ContextPacket(
        # A lone surrogate stored by an older version would make the prompt unwritable for every
        # agent (groupx_site/core/text.py): the packet carries U+FFFD in its place.
        text=repair(sections.render())[0],
        through_seq=source["seq"],
        after_seq=after_seq,
        omitted=None if omitted_unread is None else omitted + omitted_unread,
        omitted_unread=omitted_unread,
        newest_omitted_seq=newest_omitted,
        summary_through_seq=embedded.through_seq if embedded else None,
        checkpoint=reads.checkpoint,
    )

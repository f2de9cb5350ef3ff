"""The Context Packet's groups (memory/context.py, FEATURES §14): who sees which memory, in which
section, in the fixed order, and what a small budget leaves out."""

from __future__ import annotations

import re

import pytest

from memory.actions import do_remember_memory, remember_memory, retract_memory
from memory.context import ORDER, ContextBudgetExceeded, build_context_packet
from memory.identity import do_remember_identity
from memory.inputs import check_memory_write
from memory.models import MemoryRecord
from memory.records import WEB_WRITER, Writer
from setup_wizard import roster
from tests.unit.room import actor, command_id, post

ALPHA = "agent:alpha"


def agent_writer(actor_id: str) -> Writer:
    return Writer(f"binding_{actor_id}", actor(actor_id), "mcp")


def remember(scope: dict, content: str, kind: str = "fact") -> None:
    remember_memory(
        WEB_WRITER,
        check_memory_write({"clientCommandId": command_id(), "scope": scope, "kind": kind, "content": content}),
    )


def sections(text: str) -> list[str]:
    return re.findall(r"^\[([a-z_]+)\]$", text, flags=re.MULTILINE)


def section(text: str, name: str) -> str:
    after = text.split(f"[{name}]\n", 1)[1]
    return re.split(r"\n\n\[[a-z_]+\]\n", after, maxsplit=1)[0]


@pytest.fixture
def source() -> dict:
    """The message that wakes alpha, in its own correlation, with memory of every group around it."""
    other = post(["agent:beta"], "another conversation")
    message = post([ALPHA], "what do we know?")
    remember({"type": "agent", "id": ALPHA}, "alpha core: prefers small commits")
    remember({"type": "agent", "id": "agent:beta"}, "beta core: never shown to alpha")
    remember({"type": "room", "id": "room:main"}, "room: the build runs on 2 cores")
    remember({"type": "correlation", "id": message["correlationId"]}, "this thread: the deadline is today")
    remember({"type": "correlation", "id": other["correlationId"]}, "other thread: not for alpha")
    do_remember_memory(
        agent_writer(ALPHA),
        scope_type="agent",
        scope_id=ALPHA,
        agent_memory_type="dated",
        kind="fact",
        content="alpha dated: yesterday it fixed the lanes",
        subject_actor_id=None,
        source_event_id=None,
    )
    for writer, content in (
        (agent_writer(ALPHA), "self: alpha reviews code"),
        (WEB_WRITER, "user says: alpha is careful"),
        (agent_writer("agent:beta"), "observed by beta: alpha is fast"),
    ):
        do_remember_identity(writer, subject=ALPHA, kind="note", content=content, source_event_id=None)
    return message


def packet(source: dict, **kwargs):
    return build_context_packet(roster.live_agent(ALPHA), source["messageEventId"], **kwargs)


def test_every_group_lands_in_its_own_section_in_the_fixed_order(source):
    text = packet(source).text
    expected = [
        name
        for name in ORDER
        if name not in ("supervision_watch", "configured_agent_identity", "room_checkpoint_summary", "reply_chain")
    ]
    assert sections(text) == expected
    assert text.endswith("[current_message]\nwhat do we know?")


def test_each_section_holds_exactly_its_groups_records(source):
    text = packet(source).text
    assert "alpha core" in section(text, "agent_core_memory")
    assert "alpha dated" in section(text, "agent_dated_memory")
    public = section(text, "public_memory")
    assert "room: the build" in public and "this thread" in public
    assert "self: alpha" in section(text, "self_identity")
    assert "user says" in section(text, "user_authored_identity")
    assert "observed by beta" in section(text, "observed_identity")
    assert "another conversation" in section(text, "room_delta_since_cursor")


def test_another_agents_core_memory_and_another_threads_memory_never_enter(source):
    text = packet(source).text
    assert "beta core" not in text
    assert "other thread" not in text


def test_a_retracted_record_leaves_the_packet(source):
    record = MemoryRecord.objects.get(content__startswith="room: the build")
    retract_memory(WEB_WRITER, record.memory_id, command_id())
    assert "room: the build" not in packet(source).text


def test_a_small_budget_keeps_the_mandatory_parts_and_counts_what_it_left_out(source):
    mandatory = len(packet(source, budget=1).text)  # nothing optional fits in one character
    tight = packet(source, budget=mandatory)
    assert sections(tight.text) == ["groupx_protocol", "current_message"]
    assert tight.omitted == 7 + 1  # six groups' seven records and one unread message


def test_mandatory_parts_over_the_hard_ceiling_fail_the_turn(settings):
    settings.GROUPX_CONFIG = settings.GROUPX_CONFIG.model_copy(
        update={"limits": settings.GROUPX_CONFIG.limits.model_copy(update={"contextCharacters": 1024})}
    )
    message = post([ALPHA], "x" * 2000)
    with pytest.raises(ContextBudgetExceeded):
        packet(message)


def test_the_unread_rows_come_newest_first_off_the_seq_range_without_sorting_the_log():
    # With the event_type index SQLite sorted every unread event before the packet read its first
    # 200: 6.3 s at 1,000,000 unread events (docs/DECISIONS.md D56). The plan must walk the seq range.
    import json

    from django.db import connection

    from memory import sql as memory_sql
    from memory.transcript import CONTEXT_TYPES, WATCH_BRIEF_KIND

    params = ["room:main", *CONTEXT_TYPES, WATCH_BRIEF_KIND, 0, 10**9, json.dumps([])]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + memory_sql._PACKET_UNREAD["sqlite"], params)
        plan = " | ".join(str(row[-1]) for row in cursor.fetchall())
    assert "TEMP B-TREE" not in plan, plan
    assert "INTEGER PRIMARY KEY" in plan, plan


def test_a_packet_that_leaves_out_only_memory_is_built_at_the_hard_ceiling_in_the_first_call(settings):
    # Nothing to compact: the lane's first (synchronous) call returns what prepare_packet would
    # build, instead of None and two more builds (~3 × the packet per Turn with 10,000 memory items).
    from asgiref.sync import async_to_sync

    from memory.engine import packet_if_it_fits, prepare_packet

    settings.GROUPX_CONFIG = settings.GROUPX_CONFIG.model_copy(
        update={"limits": settings.GROUPX_CONFIG.limits.model_copy(update={"contextCharacters": 4096})}
    )
    for n in range(40):
        remember({"type": "agent", "id": ALPHA}, f"core note {n}: " + "c" * 60)
    message = post([ALPHA], "what do we know?")
    agent = roster.live_agent(ALPHA)
    first = packet_if_it_fits(agent, message["messageEventId"])
    assert first is not None and first.omitted > 0 and first.newest_omitted_seq is None
    assert first == async_to_sync(prepare_packet)(agent, message["messageEventId"])
    assert first == build_context_packet(agent, message["messageEventId"], budget=4096)


def test_the_lanes_first_packet_leaving_unread_messages_out_does_not_count_the_whole_unread_range(settings):
    # It is thrown away for a compaction; the COUNT over the unread range was ~0.5 s per build at
    # 1,000,000 unread events, on the writer thread, up to 9 builds for one Turn (D62).
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from memory.engine import packet_if_it_fits

    settings.GROUPX_CONFIG = settings.GROUPX_CONFIG.model_copy(
        update={"limits": settings.GROUPX_CONFIG.limits.model_copy(update={"contextCharacters": 4096})}
    )
    from django.utils import timezone

    from rooms.models import Event

    Event.objects.bulk_create(
        [
            Event(
                event_id=f"evt_early{n}",
                room_id="room:main",
                event_type="message.created",
                actor_id="user:local",
                actor_kind="user",
                actor_display_name="You",
                targets=[],
                correlation_id=f"cor_{n}",
                root_correlation_id=f"cor_{n}",
                occurred_at=timezone.now(),
                body={"content": f"earlier {n}: " + "e" * 80},
            )
            for n in range(60)
        ]
    )
    message = post([ALPHA], "what do we know?")
    with CaptureQueriesContext(connection) as captured:
        assert packet_if_it_fits(roster.live_agent(ALPHA), message["messageEventId"]) is None
    assert not [q["sql"] for q in captured.captured_queries if "COUNT(" in q["sql"].upper()]
    counted = build_context_packet(roster.live_agent(ALPHA), message["messageEventId"], budget=3072)
    assert counted.newest_omitted_seq is not None and counted.omitted_unread > 0  # a packet for use counts


def test_each_records_author_is_named_as_the_actor_is_named_now_or_by_its_id_without_an_actor(source):
    # The names come from one read per packet (D71): a renamed actor shows its new name at once,
    # and an author no actor row names shows its id, as before.
    from agents.models import Actor

    MemoryRecord.objects.create(
        memory_id="mem_ghost",
        scope_type="room",
        scope_id="room:main",
        kind="fact",
        author_actor_id="agent:ghost",
        content="ghost: no actor row",
        source_kind="web",
        status="active",
        created_at=MemoryRecord.objects.first().created_at,
    )
    Actor.objects.filter(actor_id="agent:beta").update(display_name="Beta 'the fast'")
    text = packet(source).text
    authors = re.findall(r"^- id=(?:mem|idn)_\S+ author=(\S+) name=(.*) subject=", text, flags=re.MULTILINE)
    names = dict(Actor.objects.values_list("actor_id", "display_name"))
    assert len(authors) == 8 and {"agent:beta", "agent:ghost", ALPHA} <= {author for author, _ in authors}
    assert all(shown == repr(names.get(author, author)) for author, shown in authors), authors
    assert "author=agent:beta name=\"Beta 'the fast'\"" in section(text, "observed_identity")


def _surroundings() -> dict:
    """Memory and identity no packet of alpha's may show, and alpha's message."""
    other = post(["agent:beta"], "another conversation")
    remember({"type": "agent", "id": "agent:beta"}, "beta core: never shown to alpha")
    remember({"type": "correlation", "id": other["correlationId"]}, "other thread: not for alpha")
    remember({"type": "room", "id": "room:main"}, "retracted room note")
    retract_memory(WEB_WRITER, MemoryRecord.objects.get(content="retracted room note").memory_id, command_id())
    do_remember_identity(
        agent_writer(ALPHA), subject="agent:beta", kind="note", content="alpha on beta", source_event_id=None
    )
    return post([ALPHA], "what do we know?")


def test_a_table_with_no_record_for_the_packet_is_not_read_and_adds_nothing_left_out():
    # The prelude says whether each table holds a record this packet could show (D71). Other
    # agents' memory, other threads' memory, retracted records and identity about others do not count.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    message = _surroundings()
    with CaptureQueriesContext(connection) as captured:
        alone = packet(message, budget=1)
    assert not [q["sql"] for q in captured.captured_queries if "LIMIT" in q["sql"] and "record" in q["sql"]]
    assert alone.omitted == 1  # the other conversation's message only


@pytest.mark.parametrize("scope", ["core", "dated", "room", "correlation", "self", "user", "observed"])
def test_the_one_record_of_any_scope_a_packet_may_show_is_read_shown_and_counted_when_left_out(scope):
    message = _surroundings()
    content = f"the one {scope} record"
    if scope in ("core", "room", "correlation"):
        remember(
            {"type": "agent", "id": ALPHA}
            if scope == "core"
            else {"type": "room", "id": "room:main"}
            if scope == "room"
            else {"type": "correlation", "id": message["correlationId"]},
            content,
        )
    elif scope == "dated":
        do_remember_memory(
            agent_writer(ALPHA),
            scope_type="agent",
            scope_id=ALPHA,
            agent_memory_type="dated",
            kind="fact",
            content=content,
            subject_actor_id=None,
            source_event_id=None,
        )
    else:
        writer = {"self": agent_writer(ALPHA), "user": WEB_WRITER, "observed": agent_writer("agent:beta")}[scope]
        do_remember_identity(writer, subject=ALPHA, kind="note", content=content, source_event_id=None)
    assert packet(message, budget=1).omitted == 1 + 1
    shown = packet(message).text
    assert content in shown and "not for alpha" not in shown and "never shown" not in shown


def test_the_packet_at_the_hard_ceiling_after_the_probe_is_composed_from_the_probes_reads(settings):
    # D71: the probe at the soft target read everything the packet at the hard ceiling shows; the
    # second composition reads nothing again, and is the packet a build at the ceiling gives.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from memory.engine import packet_if_it_fits

    settings.GROUPX_CONFIG = settings.GROUPX_CONFIG.model_copy(
        update={"limits": settings.GROUPX_CONFIG.limits.model_copy(update={"contextCharacters": 4096})}
    )
    post(["agent:beta"], "an unread message")
    for n in range(8):
        remember({"type": "agent", "id": ALPHA}, f"core note {n}: " + "c" * 60)
    for n in range(15):
        do_remember_identity(
            WEB_WRITER, subject=ALPHA, kind="note", content=f"user note {n}: " + "u" * 40, source_event_id=None
        )
    message = post([ALPHA], "what do we know?")
    agent = roster.live_agent(ALPHA)
    with CaptureQueriesContext(connection) as captured:
        lanes = packet_if_it_fits(agent, message["messageEventId"])
    with CaptureQueriesContext(connection) as once:
        built = build_context_packet(agent, message["messageEventId"], budget=4096)
    assert lanes == built and lanes.omitted > 0 and "an unread message" in lanes.text
    assert [q["sql"] for q in captured.captured_queries] == [q["sql"] for q in once.captured_queries]

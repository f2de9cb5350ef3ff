"""Every raw SQL statement (rooms/sql.py, turns/sql.py, memory/sql.py; docs/DECISIONS.md D32)
against the ORM: a write leaves the row the ORM's create/update would leave (the stored columns
compared, ids aside), a read returns what the ORM query returns."""

from __future__ import annotations

import ast
import inspect
from datetime import UTC, date, datetime, timedelta

import pytest
from django.core.exceptions import FieldDoesNotExist
from django.db import connection
from django.db.models import Count, F, Max, Q, Value
from django.db.models.functions import Coalesce, Greatest

from agents.models import DeliveryCursor
from groupx_site.store import sql as store_sql
from groupx_site.store.sql import Names, placeholders
from memory import sql as memory_sql
from memory.models import (
    AGENT_MEMORY_TYPES,
    ContextReset,
    DatedMemoryRollup,
    DatedMemorySource,
    IdentityRecord,
    MemoryRecord,
    Summary,
)
from memory.transcript import CONTEXT_TYPES, WATCH_BRIEF_KIND, context_events
from rooms import sql as rooms_sql
from rooms.models import ROOM_ID, ClientCommand, Event
from tests.unit.room import claim, post, queued_turn
from turns import sql as turn_sql
from turns.models import Turn, TurnAttempt
from turns.states import (
    ACTIVE_STATUSES,
    CANCELLED,
    CANCELLING,
    COMPLETED,
    DISPATCHING,
    FAILED,
    IN_FLIGHT_STATUSES,
    QUEUED,
    RUNNING,
)

NOW = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)
ALPHA, BETA = "agent:alpha", "agent:beta"


# A column's storage class (SQLite) or type (PostgreSQL, make test-pg) and its SQL literal.
LITERAL = {
    "sqlite": "typeof({c}) || ':' || quote({c})",
    "postgresql": "pg_typeof({c})::text || ':' || quote_nullable({c})",
}


def stored(model, **lookup) -> dict:
    """The row as the database holds it (column → its storage class and SQL literal,
    ``text:'2026-…'``: the exact text of a datetime or a JSON value) and as the ORM reads it back:
    both must match for two writes to be the same."""
    row = model.objects.get(**lookup)
    columns = [field.column for field in model._meta.concrete_fields]
    literals = ", ".join(LITERAL[connection.vendor].format(c=c) for c in columns)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {literals} FROM {model._meta.db_table} WHERE {model._meta.pk.column} = %s", [row.pk])
        raw = dict(zip(columns, cursor.fetchone(), strict=True))
    return {"stored": raw, "read": model.objects.filter(pk=row.pk).values()[0]}


def without(row: dict, *columns: str) -> dict:
    return {part: {k: v for k, v in values.items() if k not in columns} for part, values in row.items()}


def differences(a: dict, b: dict) -> dict:
    """{(part, column): (a's, b's)} where two ``stored`` rows differ: empty when they are the same."""
    return {
        (part, k): (a[part].get(k), b[part].get(k))
        for part in a
        for k in a[part].keys() | b[part].keys()
        if a[part].get(k) != b[part].get(k)
    }


# ---- writes ----------------------------------------------------------------------------------------

EVENT = {
    "event_id": "evt_parity",
    "room_id": ROOM_ID,
    "event_type": "message.created",
    "actor_id": "user:local",
    "actor_kind": "user",
    "actor_display_name": "Zoë",
    "instance_id": None,
    "targets": [ALPHA, BETA],
    "reply_to_event_id": "evt_parent",
    "forwarded_event_id": None,
    "causation_id": "cmd_1",
    "correlation_id": "cor_1",
    "root_correlation_id": "cor_0",
    "idempotency_key": "idem-1",
    "occurred_at": NOW,
    "body": {"content": 'ünïcode "quotes" and\nlines', "nested": {"n": 1.5, "none": None}},
    "provenance": {"via": "web"},
}


@pytest.mark.parametrize(
    "changes", [{}, {"provenance": None, "idempotency_key": None, "targets": [], "instance_id": "inst_1", "body": {}}]
)
def test_insert_event_writes_the_row_create_writes(changes):
    values = EVENT | changes
    seq = rooms_sql.insert_event(**values)
    by_sql = stored(Event, seq=seq)
    Event.objects.filter(seq=seq).delete()
    by_orm = stored(Event, pk=Event.objects.create(**values).seq)
    assert differences(without(by_sql, "seq"), without(by_orm, "seq")) == {}


def test_insert_event_binds_every_column_in_order():
    assert list(inspect.signature(rooms_sql.insert_event).parameters) == list(rooms_sql.EVENT_INSERT_FIELDS)


def test_insert_receipt_writes_the_row_create_writes():
    rooms_sql.insert_receipt(
        command_id="cmd_p",
        binding_id="web",
        client_command_id="c-1",
        command_type="message.post",
        digest="ab" * 32,
        result={"turns": [{"turnId": "turn_1"}], "ok": True},
        accepted_at=NOW,
    )
    by_sql = stored(ClientCommand, pk="cmd_p")
    ClientCommand.objects.all().delete()
    ClientCommand.objects.create(
        command_id="cmd_p",
        source_binding_id="web",
        client_command_id="c-1",
        command_type="message.post",
        canonical_hash="ab" * 32,
        result={"turns": [{"turnId": "turn_1"}], "ok": True},
        accepted_at=NOW,
    )
    assert differences(by_sql, stored(ClientCommand, pk="cmd_p")) == {}


@pytest.mark.parametrize("parent", [False, True])
def test_insert_turn_writes_the_row_create_writes(parent):
    parent_id = queued_turn() if parent else None
    values = {
        "turn_id": "turn_p",
        "source_event_id": "evt_s",
        "target_actor_id": BETA,
        "adapter_id": "kimi",
        "command_type": "agent.ask",
        "parent_turn_id": parent_id,
        "correlation_id": "cor_1",
        "root_correlation_id": "cor_0",
        "hop_count": 2,
        "queued_event_id": "evt_q",
        "enqueue_seq": 42,
        "status": QUEUED,
        "queued_at": NOW,
    }
    turn_sql.insert_turn(**values)
    by_sql = stored(Turn, pk="turn_p")
    Turn.objects.filter(pk="turn_p").delete()
    Turn.objects.create(**values)
    assert differences(by_sql, stored(Turn, pk="turn_p")) == {}


@pytest.mark.parametrize("optional", [False, True])
def test_insert_attempt_writes_the_row_create_writes(optional):
    turn_id = queued_turn()
    values = {
        "attempt_id": "att_p",
        "turn_id": turn_id,
        "binding_id": "binding_x" if optional else None,
        "instance_id": "inst_x" if optional else None,
        "context_through_seq": 7,
        "summary_through_seq": 5 if optional else None,
        "claimed_at": NOW,
    }
    turn_sql.insert_attempt(**values)
    by_sql = stored(TurnAttempt, pk="att_p")
    TurnAttempt.objects.filter(pk="att_p").delete()
    TurnAttempt.objects.create(**values)
    assert differences(by_sql, stored(TurnAttempt, pk="att_p")) == {}


def twin_turns() -> tuple[str, str]:
    """Two queued Turns of one message, to move one by SQL and the other by the ORM."""
    turns = post([ALPHA, BETA])["turns"]
    return turns[0]["turnId"], turns[1]["turnId"]


def same_but_ids(a: str, b: str, *differ: str) -> None:
    ids = ("turn_id", "target_actor_id", "queued_event_id", "enqueue_seq", "queued_at", *differ)
    assert differences(without(stored(Turn, pk=a), *ids), without(stored(Turn, pk=b), *ids)) == {}


def test_claim_turn_moves_the_row_as_the_orm_update_does():
    by_sql, by_orm = twin_turns()
    returned = turn_sql.claim_turn(by_sql, "binding_x")
    assert Turn.objects.filter(pk=by_orm, status=QUEUED).update(status=DISPATCHING, binding_id="binding_x") == 1
    same_but_ids(by_sql, by_orm)
    assert returned == Turn.objects.values_list(
        "target_actor_id", "source_event_id", "correlation_id", "root_correlation_id"
    ).get(pk=by_sql)
    # Not queued any more: nothing moves, as the ORM's update matches no row.
    before = stored(Turn, pk=by_sql)
    assert turn_sql.claim_turn(by_sql, "binding_y") is None
    assert stored(Turn, pk=by_sql) == before


@pytest.mark.parametrize("status", [DISPATCHING, CANCELLING])
def test_start_turn_moves_the_row_as_the_orm_updates_do(status):
    by_sql, by_orm = twin_turns()
    Turn.objects.filter(pk__in=[by_sql, by_orm]).update(status=status, binding_id="binding_x")
    turn_sql.start_turn(by_sql, "native-1", NOW)
    Turn.objects.filter(pk=by_orm).update(native_turn_id="native-1")
    Turn.objects.filter(pk=by_orm, status=DISPATCHING).update(status=RUNNING, started_at=NOW)
    same_but_ids(by_sql, by_orm)
    assert Turn.objects.get(pk=by_sql).status == (RUNNING if status == DISPATCHING else CANCELLING)


@pytest.mark.parametrize("status", [COMPLETED, FAILED])
def test_finish_turn_moves_the_row_as_the_orm_update_does(status):
    by_sql, by_orm = twin_turns()
    Turn.objects.filter(pk__in=[by_sql, by_orm]).update(status=RUNNING)
    failed = status == FAILED
    columns = {
        "response_event_id": None if failed else "evt_reply",
        "terminal_event_id": "evt_terminal",
        "error_code": "AGENT_FAILED" if failed else None,
        "partial_text": "ünï part" if failed else "",
        "terminal_at": NOW,
    }
    assert turn_sql.finish_turn(by_sql, RUNNING, status, **columns) is True
    assert Turn.objects.filter(pk=by_orm, status=RUNNING).update(status=status, **columns) == 1
    same_but_ids(by_sql, by_orm)
    # No longer running: nothing moves, as the ORM's update matches no row.
    before = stored(Turn, pk=by_sql)
    assert turn_sql.finish_turn(by_sql, RUNNING, CANCELLED, **columns) is False
    assert stored(Turn, pk=by_sql) == before


def twin_attempts() -> tuple[str, str]:
    """The attempts of two claimed Turns of one message, to move one by SQL and the other by the ORM."""
    by_sql, by_orm = twin_turns()
    return claim(by_sql).attempt_id, claim(by_orm).attempt_id


def same_attempts(a: str, b: str) -> None:
    ids = ("attempt_id", "turn_id", "binding_id", "instance_id", "claimed_at")
    assert differences(without(stored(TurnAttempt, pk=a), *ids), without(stored(TurnAttempt, pk=b), *ids)) == {}


@pytest.mark.parametrize("phase", ["prepared", "native_started"])
def test_attempt_prompt_invoked_moves_the_row_as_the_orm_update_does(phase):
    by_sql, by_orm = twin_attempts()
    TurnAttempt.objects.filter(pk__in=[by_sql, by_orm]).update(dispatch_phase=phase)
    turn_sql.attempt_prompt_invoked(by_sql, NOW)
    TurnAttempt.objects.filter(attempt_id=by_orm, dispatch_phase="prepared").update(
        dispatch_phase="prompt_invoked", delivery_certainty="unknown", prompt_invoked_at=NOW
    )
    same_attempts(by_sql, by_orm)
    assert TurnAttempt.objects.get(pk=by_sql).dispatch_phase == ("prompt_invoked" if phase == "prepared" else phase)


@pytest.mark.parametrize("native_turn_id", [None, "native-1"])
def test_attempt_started_and_terminal_move_the_row_as_the_orm_updates_do(native_turn_id):
    by_sql, by_orm = twin_attempts()
    turn_sql.attempt_started(by_sql, native_turn_id, NOW)
    TurnAttempt.objects.filter(attempt_id=by_orm).update(
        dispatch_phase="native_started", delivery_certainty="delivered", native_turn_id=native_turn_id, started_at=NOW
    )
    same_attempts(by_sql, by_orm)
    later = NOW + timedelta(seconds=1)
    turn_sql.attempt_terminal(by_sql, later)
    TurnAttempt.objects.filter(attempt_id=by_orm).update(dispatch_phase="terminal", terminal_at=later)
    same_attempts(by_sql, by_orm)


@pytest.mark.parametrize("have", [None, 4, 10, 20])
def test_advance_delivery_cursor_moves_the_row_as_the_orm_update_does(have):
    post([ALPHA, BETA])  # the two agents' actor rows
    if have is not None:
        for actor_id in (ALPHA, BETA):
            DeliveryCursor.objects.create(actor_id=actor_id, room_id=ROOM_ID, last_delivered_seq=have)
        DeliveryCursor.objects.update(updated_at=NOW)  # auto_now at create; neither update below sets it
    moved = memory_sql.advance_delivery_cursor(actor_id=ALPHA, room_id=ROOM_ID, through_seq=10)
    assert moved == (
        DeliveryCursor.objects.filter(actor_id=BETA, room_id=ROOM_ID, last_delivered_seq__lt=10).update(
            last_delivered_seq=10
        )
        == 1
    )
    assert moved == (have is not None and have < 10)
    if have is not None:
        assert (
            differences(
                without(stored(DeliveryCursor, actor_id=ALPHA), "id", "actor_id"),
                without(stored(DeliveryCursor, actor_id=BETA), "id", "actor_id"),
            )
            == {}
        )


def rollup(actor_id: str, **fields) -> DatedMemoryRollup:
    return DatedMemoryRollup.objects.create(room_id=ROOM_ID, actor_id=actor_id, local_date=date(2026, 3, 4), **fields)


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {
            "pending_turns": 2,
            "pending_chars": 10,
            "pending_through_seq": 99,
            "first_pending_at": NOW - timedelta(hours=1),
            "last_pending_at": NOW,
        },
    ],
)
def test_bump_dated_rollup_updates_the_row_as_the_orm_update_does(fields):
    a, b = rollup(ALPHA, **fields), rollup(BETA, **fields)
    DatedMemoryRollup.objects.update(updated_at=NOW)  # auto_now at create; neither update below sets it
    assert memory_sql.bump_dated_rollup(
        room_id=ROOM_ID, actor_id=ALPHA, day=date(2026, 3, 4), chars=7, through_seq=50, now=NOW
    )
    assert (
        DatedMemoryRollup.objects.filter(pk=b.pk).update(
            pending_turns=F("pending_turns") + 1,
            pending_chars=F("pending_chars") + 7,
            pending_through_seq=Greatest("pending_through_seq", Value(50)),
            first_pending_at=Coalesce("first_pending_at", Value(NOW)),
            last_pending_at=NOW,
        )
        == 1
    )
    assert (
        differences(
            without(stored(DatedMemoryRollup, pk=a.pk), "id", "actor_id"),
            without(stored(DatedMemoryRollup, pk=b.pk), "id", "actor_id"),
        )
        == {}
    )
    # No row for the day: nothing written, False.
    assert not memory_sql.bump_dated_rollup(
        room_id=ROOM_ID, actor_id=ALPHA, day=date(2026, 3, 5), chars=7, through_seq=50, now=NOW
    )


def test_insert_dated_source_writes_the_row_create_writes():
    values = {
        "turn_id": "turn_p",
        "room_id": ROOM_ID,
        "actor_id": ALPHA,
        "local_date": date(2026, 3, 4),
        "source_event_id": "evt_s",
        "source_seq": 41,
        "response_event_id": "evt_r",
        "response_seq": 43,
        "source_chars": 17,
        "terminal_at": NOW,
    }
    memory_sql.insert_dated_source(**values)
    by_sql = stored(DatedMemorySource, pk="turn_p")
    DatedMemorySource.objects.all().delete()
    DatedMemorySource.objects.create(**values)
    assert differences(by_sql, stored(DatedMemorySource, pk="turn_p")) == {}


def test_insert_dated_source_binds_every_column_in_order():
    assert list(inspect.signature(memory_sql.insert_dated_source).parameters) == list(
        memory_sql.DATED_SOURCE_INSERT_FIELDS
    )


# ---- reads -----------------------------------------------------------------------------------------


def test_find_receipt_reads_what_the_orm_reads():
    post([ALPHA], clientCommandId="c-find")
    receipt = ClientCommand.objects.get(client_command_id="c-find")
    assert rooms_sql.find_receipt(receipt.source_binding_id, "c-find") == (
        receipt.command_type,
        receipt.canonical_hash,
        receipt.result,
    )
    assert rooms_sql.find_receipt(receipt.source_binding_id, "c-none") is None


def test_lane_head_turn_status_and_counts_read_what_the_orm_reads():
    first, second = queued_turn(ALPHA), queued_turn(ALPHA)
    queued_turn(BETA)
    claim(first)
    orm_head = (
        Turn.objects.filter(target_actor_id=ALPHA, status=QUEUED)
        .order_by("enqueue_seq")
        .values_list(*turn_sql.LANE_HEAD_COLUMNS)
        .first()
    )
    assert turn_sql.lane_head(ALPHA) == orm_head and orm_head[0] == second
    assert turn_sql.lane_head("agent:gamma") is None
    assert turn_sql.turn_status(first) == Turn.objects.get(pk=first).status == DISPATCHING
    assert turn_sql.turn_status("turn_none") is None
    actors = [ALPHA, BETA, "agent:gamma"]
    orm_counts = dict(
        Turn.objects.filter(target_actor_id__in=actors, status__in=ACTIVE_STATUSES)
        .values_list("target_actor_id")
        .annotate(n=Count("*"))
    )
    assert turn_sql.active_turn_counts(actors) == orm_counts == {ALPHA: 2, BETA: 1}
    seq = Turn.objects.get(pk=second).enqueue_seq
    orm_ahead = (
        Turn.objects.filter(target_actor_id=ALPHA, status__in=IN_FLIGHT_STATUSES, enqueue_seq__lt=seq)
        .order_by("enqueue_seq")
        .values_list("turn_id", flat=True)
        .first()
    )
    assert turn_sql.in_flight_ahead(ALPHA, seq) == orm_ahead == first
    assert turn_sql.in_flight_ahead(BETA, seq) is None


def test_terminal_read_reads_what_the_orm_reads():
    turn_id = queued_turn(ALPHA, "the source")
    claimed = claim(turn_id)
    turn, attempt = Turn.objects.get(pk=turn_id), TurnAttempt.objects.get(pk=claimed.attempt_id)
    source = Event.objects.get(event_id=turn.source_event_id)
    expected = turn_sql.TerminalRead(
        turn.status,
        turn.target_actor_id,
        turn.source_event_id,
        turn.correlation_id,
        turn.root_correlation_id,
        turn.command_type,
        attempt.attempt_id,
        attempt.delivery_certainty,
        attempt.context_through_seq,
        attempt.summary_through_seq,
        source.seq,
        source.body,
    )
    assert turn_sql.terminal_read(turn_id, claimed.attempt_id) == expected
    # No attempt, no source row, no Turn.
    Event.objects.filter(seq=source.seq).delete()
    assert turn_sql.terminal_read(turn_id, None) == turn_sql.TerminalRead(
        *[
            getattr(turn, f)
            for f in (
                "status",
                "target_actor_id",
                "source_event_id",
                "correlation_id",
                "root_correlation_id",
                "command_type",
            )
        ],
        None,
        None,
        None,
        None,
        None,
        None,
    )
    assert turn_sql.terminal_read("turn_none", None) is None


def memory_record(
    n: int, scope_type: str, scope_id: str, agent_memory_type: str | None = None, status: str = "active"
) -> None:
    MemoryRecord.objects.create(
        memory_id=f"mem_{n}",
        scope_type=scope_type,
        scope_id=scope_id,
        agent_memory_type=agent_memory_type,
        kind="fact",
        author_actor_id="user:local",
        content=f"record {n}",
        source_kind="web",
        status=status,
        created_at=NOW + timedelta(seconds=n),
    )


def rows_of(queryset, row_type) -> list:
    return [row_type(*values) for values in queryset.values_list(*row_type._fields)]


def memory_and_identity() -> None:
    for n, args in enumerate(
        [
            ("agent", ALPHA, "core"),
            ("agent", ALPHA, "dated"),
            ("agent", BETA, "core"),
            ("room", ROOM_ID),
            ("room", "room:other"),
            ("correlation", "cor_1"),
            ("correlation", "cor_0"),
            ("correlation", "cor_9"),
            ("room", ROOM_ID, None, "retracted"),
            ("agent", ALPHA, "core"),
            ("room", ROOM_ID),
            ("correlation", "cor_1"),
        ]
    ):
        memory_record(n, *args)
    for n, (subject, author, status) in enumerate(
        [
            (ALPHA, BETA, "active"),
            (BETA, BETA, "active"),
            (ALPHA, BETA, "superseded"),
            (ALPHA, ALPHA, "active"),
            (ALPHA, "user:local", "active"),
            (ALPHA, "USER:Web", "active"),
            (ALPHA, "users", "active"),
            (ALPHA, "agent:user:x", "active"),
            (ALPHA, ALPHA, "retracted"),
            (ALPHA, "user:local", "active"),
        ]
    ):
        IdentityRecord.objects.create(
            identity_id=f"idn_{n}",
            subject_actor_id=subject,
            author_actor_id=author,
            kind="note",
            content=f"identity {n}",
            source_kind="mcp",
            status=status,
            created_at=NOW + timedelta(seconds=n),
        )


@pytest.mark.parametrize("correlations", [{"cor_1"}, {"cor_1", "cor_0"}])
def test_packet_memory_and_identity_read_what_the_orm_reads(correlations):
    memory_and_identity()
    for limit in (2, 50):
        orm = MemoryRecord.objects.filter(
            Q(scope_type="agent", scope_id=ALPHA, agent_memory_type__in=AGENT_MEMORY_TYPES)
            | Q(scope_type="room", scope_id=ROOM_ID)
            | Q(scope_type="correlation", scope_id__in=correlations),
            status="active",
        ).order_by("-id")[:limit]
        got = memory_sql.packet_memory(actor_id=ALPHA, room_id=ROOM_ID, correlations=correlations, limit=limit)
        assert got == rows_of(orm, memory_sql.MemoryRow) and got
        orm = IdentityRecord.objects.filter(status="active", subject_actor_id=ALPHA).order_by("-id")[:limit]
        got = memory_sql.packet_identity(actor_id=ALPHA, limit=limit)
        assert got == rows_of(orm, memory_sql.IdentityRow) and got
    assert memory_sql.packet_identity(actor_id="agent:gamma", limit=5) == []


def test_each_packet_group_read_on_its_own_reads_what_the_orm_reads():
    # The ORM's startswith is SQLite's LIKE: ASCII case-insensitive, as the packet's predicate.
    memory_and_identity()
    user = (
        Q(author_actor_id__startswith="user:")
        if connection.vendor == "sqlite"
        else Q(author_actor_id__istartswith="user:")
    )
    memory, identity = (
        MemoryRecord.objects.filter(status="active"),
        IdentityRecord.objects.filter(status="active", subject_actor_id=ALPHA),
    )
    groups = [
        ("agent_memory", [ALPHA, "core"], memory.filter(scope_type="agent", scope_id=ALPHA, agent_memory_type="core")),
        (
            "agent_memory",
            [ALPHA, "dated"],
            memory.filter(scope_type="agent", scope_id=ALPHA, agent_memory_type="dated"),
        ),
        ("scope_memory", ["room", ROOM_ID], memory.filter(scope_type="room", scope_id=ROOM_ID)),
        ("scope_memory", ["correlation", "cor_1"], memory.filter(scope_type="correlation", scope_id="cor_1")),
        ("self_identity", [ALPHA, ALPHA], identity.filter(author_actor_id=ALPHA)),
        ("user_identity", [ALPHA], identity.filter(user)),
        ("observed_identity", [ALPHA, ALPHA], identity.exclude(author_actor_id=ALPHA).exclude(user)),
    ]
    for group, params, orm in groups:
        row_type = memory_sql.GROUP_ROWS[group]
        newest_first = rows_of(orm.order_by("-id"), row_type)
        assert newest_first, group
        for below in (2**63 - 1, newest_first[0].id, newest_first[-1].id):
            for limit in (1, 2, 50):
                got = memory_sql.group_page(group, params, below_id=below, limit=limit)
                assert got == [r for r in newest_first if r.id < below][:limit], (group, below, limit)
        assert memory_sql.group_count(group, params) == orm.count()
    assert [
        r.author_actor_id for r in memory_sql.group_page("user_identity", [ALPHA], below_id=2**63 - 1, limit=9)
    ] == ["user:local", "USER:Web", "user:local"]


def entries(queryset) -> list[dict]:
    return list(queryset.values(*memory_sql.PACKET_ENTRY_COLUMNS))


@pytest.mark.parametrize("with_state", [False, True])
def test_packet_prelude_reads_what_the_orm_reads(with_state):
    post([BETA], "before")
    post([ALPHA], "hello")
    source_id = Event.objects.filter(event_type="message.created").order_by("-seq").first().event_id
    if with_state:
        DeliveryCursor.objects.create(actor_id=ALPHA, room_id=ROOM_ID, last_delivered_seq=3)
        ContextReset.objects.create(reset_id="rst_1", room_id=ROOM_ID, through_seq=2, created_at=NOW)
        ContextReset.objects.create(reset_id="rst_2", room_id=ROOM_ID, through_seq=1, created_at=NOW)
        Summary.objects.create(
            summary_id="sum_old",
            room_id=ROOM_ID,
            from_seq=0,
            through_seq=1,
            content="old",
            generator_actor_id=BETA,
            status="superseded",
            created_at=NOW,
        )
        Summary.objects.create(
            summary_id="sum_1",
            room_id=ROOM_ID,
            from_seq=1,
            through_seq=4,
            content="now",
            generator_actor_id=BETA,
            created_at=NOW,
        )
    prelude = memory_sql.packet_prelude(actor_id=ALPHA, room_id=ROOM_ID, source_event_id=source_id)
    expected_source = Event.objects.values(
        *memory_sql.PACKET_ENTRY_COLUMNS, "correlation_id", "root_correlation_id"
    ).get(event_id=source_id)
    assert prelude.source == expected_source
    cursor = DeliveryCursor.objects.filter(actor_id=ALPHA, room_id=ROOM_ID).first()
    assert prelude.cursor == (cursor.last_delivered_seq if cursor else 0)
    assert prelude.floor == (ContextReset.objects.filter(room_id=ROOM_ID).aggregate(m=Max("through_seq"))["m"] or 0)
    summary = Summary.objects.filter(room_id=ROOM_ID, status="active").first()
    if summary is None:
        assert prelude.summary is None
    else:
        assert {c: getattr(prelude.summary, c) for c in memory_sql.SUMMARY_COLUMNS} == {
            c: getattr(summary, c) for c in memory_sql.SUMMARY_COLUMNS
        }
    assert memory_sql.packet_prelude(actor_id=ALPHA, room_id=ROOM_ID, source_event_id="evt_none") is None


@pytest.mark.parametrize("records", ["none", "all"])
def test_the_preludes_flags_say_whether_the_packets_memory_and_identity_reads_find_a_row(records):
    # A flag that says no skips the read (memory/context.py, D71): it must say yes whenever the
    # read finds a row, for the source's correlation and its root alike.
    if records == "all":
        memory_and_identity()
    events = []
    for n, (correlation, root) in enumerate(
        [("cor_1", "cor_1"), ("cor_x", "cor_1"), ("cor_0", "cor_9"), ("cor_x", "cor_y")]
    ):
        events.append(
            Event.objects.create(
                event_id=f"evt_flag{n}",
                room_id=ROOM_ID,
                event_type="message.created",
                actor_id="user:local",
                actor_kind="user",
                actor_display_name="You",
                targets=[],
                correlation_id=correlation,
                root_correlation_id=root,
                occurred_at=NOW,
                body={"content": "hi"},
            )
        )
    found = set()
    for event in events:
        for actor_id in (ALPHA, BETA, "agent:gamma"):
            if records == "all":  # only room-scoped memory gamma could see: take the room's away
                MemoryRecord.objects.filter(scope_type="room").update(
                    status="active" if actor_id != "agent:gamma" else "retracted"
                )
            prelude = memory_sql.packet_prelude(actor_id=actor_id, room_id=ROOM_ID, source_event_id=event.event_id)
            memory = memory_sql.packet_memory(
                actor_id=actor_id,
                room_id=ROOM_ID,
                limit=1,
                correlations={event.correlation_id, event.root_correlation_id},
            )
            identity = memory_sql.packet_identity(actor_id=actor_id, limit=1)
            assert (prelude.any_memory, prelude.any_identity) == (bool(memory), bool(identity)), (event, actor_id)
            found.add((prelude.any_memory, prelude.any_identity))
    assert found == ({(False, False)} if records == "none" else {(True, True), (True, False), (False, False)})


def test_packet_unread_count_and_parent_read_what_the_orm_reads():
    for n, target in enumerate([ALPHA, BETA, "agent:gamma", ALPHA]):
        post([target], f"message {n}")
    brief = Event.objects.filter(event_type="message.created").first()
    odd = dict(EVENT, event_id="evt_brief", idempotency_key=None, occurred_at=NOW)
    Event.objects.create(**(odd | {"body": {"kind": WATCH_BRIEF_KIND, "content": "hidden"}}))
    Event.objects.create(**(odd | {"event_id": "evt_nullkind", "body": {"kind": None, "content": "kept"}}))
    Event.objects.create(**(odd | {"event_id": "evt_otherkind", "body": {"kind": "other", "content": "kept"}}))
    top = Event.objects.aggregate(m=Max("seq"))["m"]
    excluded = [brief.event_id, "evt_otherkind"]
    for after, before in [(0, top + 1), (2, top), (top, top + 1)]:
        orm = context_events().filter(seq__gt=after, seq__lt=before).exclude(event_id__in=excluded).order_by("-seq")
        args = {"room_id": ROOM_ID, "after_seq": after, "before_seq": before, "excluded": excluded}
        assert list(memory_sql.packet_unread(**args)) == entries(orm)
        assert memory_sql.packet_unread_count(**args) == orm.count()
    assert "evt_nullkind" in [
        e["event_id"] for e in memory_sql.packet_unread(room_id=ROOM_ID, after_seq=0, before_seq=top + 1, excluded=[])
    ]
    for event in Event.objects.all():
        for floor in (0, event.seq - 1, event.seq):
            # Room context above the floor, watch briefs excluded (as context_events() reads it).
            orm = entries(context_events().filter(event_id=event.event_id, seq__gt=floor))
            assert memory_sql.packet_parent(event.event_id, floor) == (orm[0] if orm else None)


def test_context_window_and_the_seq_from_the_newest_read_what_the_orm_reads():
    for n, target in enumerate([ALPHA, BETA, "agent:gamma", ALPHA, BETA]):
        post([target], f"message {n}")
    odd = dict(EVENT, event_id="evt_brief", idempotency_key=None, occurred_at=NOW)
    Event.objects.create(**(odd | {"body": {"kind": WATCH_BRIEF_KIND, "content": "hidden"}}))
    Event.objects.create(**(odd | {"event_id": "evt_nullkind", "body": {"kind": None, "content": "kept"}}))
    Event.objects.create(**(odd | {"event_id": "evt_op", "event_type": "operator.dispatch"}))
    top = Event.objects.aggregate(m=Max("seq"))["m"]
    for after, before in [(0, top + 1), (2, top), (top, top + 1), (0, 2**63 - 1)]:
        orm = context_events().filter(seq__gt=after, seq__lt=before)
        for size in (1, 3, 100):
            got = memory_sql.context_window(room_id=ROOM_ID, after_seq=after, before_seq=before, size=size)
            assert got == entries(orm.order_by("seq")[:size])
        newest = list(orm.order_by("-seq").values_list("seq", flat=True))
        for offset in range(len(newest) + 2):
            assert memory_sql.context_seq_from_newest(
                room_id=ROOM_ID, after_seq=after, before_seq=before, offset=offset
            ) == (newest[offset] if offset < len(newest) else None)


# ---- the rules -------------------------------------------------------------------------------------


@pytest.mark.parametrize("resets", [(), (False,), (True,), (True, False), (False, True, False)])
def test_native_reset_mark_reads_what_the_orm_reads(resets):
    for seq, native in enumerate(resets, start=1):
        ContextReset.objects.create(
            reset_id=f"rst_{seq}", room_id=ROOM_ID, through_seq=seq * 10, reset_native_sessions=native, created_at=NOW
        )
    ContextReset.objects.create(
        reset_id="rst_other", room_id="room:other", through_seq=99, reset_native_sessions=True, created_at=NOW
    )
    orm = ContextReset.objects.filter(room_id=ROOM_ID, reset_native_sessions=True).aggregate(top=Max("through_seq"))
    assert memory_sql.native_reset_mark(ROOM_ID) == (orm["top"] or 0)


@pytest.mark.parametrize("engine", store_sql.ENGINES)
def test_in_lists_get_one_placeholder_per_constant(engine):
    assert memory_sql._PACKET_PARENT[engine].count("%s") == 3 + len(CONTEXT_TYPES)
    assert memory_sql._PACKET_MEMORY.count("%s") == 5 + len(AGENT_MEMORY_TYPES)
    assert turn_sql._ACTIVE_COUNTS[engine].count("%s") == 1 + len(ACTIVE_STATUSES)
    assert turn_sql._IN_FLIGHT_AHEAD.count("%s") == 2 + len(IN_FLIGHT_STATUSES)
    assert placeholders(("a", "b", "c")) == "%s, %s, %s"
    with pytest.raises(ValueError):
        placeholders(())


def test_names_come_from_the_models():
    assert str(Names(Turn)) == Turn._meta.db_table and str(Names(Turn, "t")) == f"{Turn._meta.db_table} t"
    assert Names(Turn).parent_turn_id == Names(Turn).parent_turn == "parent_turn_id"
    assert Names(Event, "e").seq == "e.seq"
    with pytest.raises(FieldDoesNotExist):
        _ = Names(Turn).no_such_field


def test_rooms_sql_imports_neither_turns_nor_memory():
    tree = ast.parse(inspect.getsource(rooms_sql))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert not {name for name in imported if name.split(".")[0] in {"turns", "memory", "agents"}}

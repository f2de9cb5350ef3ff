"""Each raw SQL statement (rooms/sql.py, turns/sql.py, memory/sql.py) against its ORM form, in-process.

    python -m bench.sql_vs_orm [--turns 60] [--repeat 400]

Runs ``--turns`` Turns through bench.turn_cost's real functions on a throwaway database, then
times each statement's function and the ORM code it replaces (the median CPU time of this thread
over ``--repeat`` calls, alternating the two), inside one transaction rolled back at the end.
docs/DECISIONS.md D32: a statement whose ORM form costs the same goes back to the ORM.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
from datetime import date
from pathlib import Path


def _cases():
    from django.db import DEFAULT_DB_ALIAS
    from django.db.models import Case, Count, F, Max, Q, Value, When
    from django.db.models.functions import Coalesce, Greatest
    from django.utils import timezone

    from agents.models import DeliveryCursor
    from memory import sql as memory_sql
    from memory.models import (
        AGENT_MEMORY_TYPES,
        ContextReset,
        DatedMemoryRollup,
        IdentityRecord,
        MemoryRecord,
        Summary,
    )
    from memory.transcript import CONTEXT_TYPES, context_events
    from rooms import sql as rooms_sql
    from rooms.models import ROOM_ID, ClientCommand, Event
    from turns import sql as turn_sql
    from turns.models import Turn, TurnAttempt
    from turns.states import ACTIVE_STATUSES, CLAIM, IN_FLIGHT_STATUSES, QUEUED, START

    ids = itertools.count()
    turn = Turn.objects.order_by("-enqueue_seq").first()
    actor, source = turn.target_actor_id, Event.objects.get(event_id=turn.source_event_id)
    attempt = TurnAttempt.objects.filter(turn_id=turn.turn_id).first()
    receipt = ClientCommand.objects.first()
    now = timezone.now()
    DatedMemoryRollup.objects.get_or_create(room_id=ROOM_ID, actor_id=actor, local_date=date(2026, 1, 1))
    cols = memory_sql.PACKET_ENTRY_COLUMNS
    top = Event.objects.aggregate(m=Max("seq"))["m"]
    unread = {"room_id": ROOM_ID, "after_seq": top - 12, "before_seq": top, "excluded": [source.event_id]}

    def event_values():
        return {
            "event_id": f"evt_b{next(ids)}",
            "room_id": ROOM_ID,
            "event_type": "message.created",
            "actor_id": "user:local",
            "actor_kind": "user",
            "actor_display_name": "You",
            "instance_id": None,
            "targets": [actor],
            "reply_to_event_id": None,
            "forwarded_event_id": None,
            "causation_id": None,
            "correlation_id": "cor_b",
            "root_correlation_id": "cor_b",
            "idempotency_key": None,
            "occurred_at": now,
            "body": {"content": "a message of average length"},
            "provenance": None,
        }

    def sql_event():
        values = event_values()
        event = Event(seq=rooms_sql.insert_event(**values), **values)
        event._state.adding, event._state.db = False, DEFAULT_DB_ALIAS

    def receipt_values():
        return {
            "command_id": f"cmd_b{next(ids)}",
            "client_command_id": f"c_b{next(ids)}",
            "command_type": "x",
            "result": {"ok": True},
            "accepted_at": now,
        }

    def turn_values():
        n = next(ids)
        return {
            "turn_id": f"turn_b{n}",
            "source_event_id": f"evt_s{n}",
            "target_actor_id": "agent:nobody",
            "adapter_id": "kimi",
            "command_type": "web.message",
            "parent_turn_id": None,
            "correlation_id": "cor_b",
            "root_correlation_id": "cor_b",
            "hop_count": 0,
            "queued_event_id": f"evt_q{n}",
            "enqueue_seq": n,
            "status": QUEUED,
            "queued_at": now,
        }

    def orm_claim():
        Turn.objects.filter(turn_id=turn.turn_id, status=CLAIM.current).update(status=CLAIM.new, binding_id="b")
        Turn.objects.filter(turn_id=turn.turn_id).values_list(
            "target_actor_id", "source_event_id", "correlation_id", "root_correlation_id"
        ).first()

    def orm_start():
        Turn.objects.filter(turn_id=turn.turn_id).update(
            native_turn_id="n",
            started_at=Case(When(status=START.current, then=Value(now)), default=F("started_at")),
            status=Case(When(status=START.current, then=Value(START.new)), default=F("status")),
        )

    def orm_terminal():
        Turn.objects.filter(turn_id=turn.turn_id).values_list(
            "status", "target_actor_id", "source_event_id", "correlation_id", "root_correlation_id", "command_type"
        ).first()
        TurnAttempt.objects.filter(attempt_id=attempt.attempt_id).values_list(
            "attempt_id", "delivery_certainty", "context_through_seq"
        ).first()
        Event.objects.filter(event_id=turn.source_event_id).values_list("seq", "body").first()

    def orm_prelude():
        Event.objects.filter(event_id=source.event_id).values(*cols, "correlation_id", "root_correlation_id").first()
        DeliveryCursor.objects.filter(actor_id=actor, room_id=ROOM_ID).values_list("last_delivered_seq").first()
        ContextReset.objects.filter(room_id=ROOM_ID).aggregate(top=Max("through_seq"))
        Summary.objects.filter(room_id=ROOM_ID, status="active").only(*memory_sql.SUMMARY_COLUMNS).first()

    def orm_memory():
        return list(
            MemoryRecord.objects.filter(
                Q(scope_type="agent", scope_id=actor, agent_memory_type__in=AGENT_MEMORY_TYPES)
                | Q(scope_type="room", scope_id=ROOM_ID)
                | Q(scope_type="correlation", scope_id__in={"c1", "c2"}),
                status="active",
            ).order_by("-id")[:51]
        )

    def unread_qs():
        return (
            context_events()
            .filter(seq__gt=unread["after_seq"], seq__lt=unread["before_seq"])
            .exclude(event_id__in=unread["excluded"])
            .order_by("-seq")
        )

    binding = receipt.source_binding_id
    return {
        # rooms/sql.py
        "insert_event": (sql_event, lambda: Event.objects.create(**event_values())),
        "find_receipt": (
            lambda: rooms_sql.find_receipt(binding, receipt.client_command_id),
            lambda: (
                ClientCommand.objects.filter(source_binding_id=binding, client_command_id=receipt.client_command_id)
                .values_list("command_type", "canonical_hash", "result")
                .first()
            ),
        ),
        "insert_receipt": (
            lambda: rooms_sql.insert_receipt(binding_id="b", digest="d", **receipt_values()),
            lambda: ClientCommand.objects.create(source_binding_id="b", canonical_hash="d", **receipt_values()),
        ),
        # turns/sql.py
        "lane_head": (
            lambda: turn_sql.lane_head(actor),
            lambda: (
                Turn.objects.filter(target_actor_id=actor, status=QUEUED)
                .only(*turn_sql.LANE_HEAD_COLUMNS)
                .order_by("enqueue_seq")
                .first()
            ),
        ),
        "claim_turn": (lambda: turn_sql.claim_turn(turn.turn_id, "b"), orm_claim),
        "turn_status": (
            lambda: turn_sql.turn_status(turn.turn_id),
            lambda: Turn.objects.filter(turn_id=turn.turn_id).values_list("status", flat=True).first(),
        ),
        "start_turn": (lambda: turn_sql.start_turn(turn.turn_id, "n", now), orm_start),
        "terminal_read": (lambda: turn_sql.terminal_read(turn.turn_id, attempt.attempt_id), orm_terminal),
        "active_turn_counts": (
            lambda: turn_sql.active_turn_counts([actor]),
            lambda: dict(
                Turn.objects.filter(target_actor_id__in=[actor], status__in=ACTIVE_STATUSES)
                .values_list("target_actor_id")
                .annotate(n=Count("*"))
            ),
        ),
        "in_flight_ahead": (
            lambda: turn_sql.in_flight_ahead(actor, 10**9),
            lambda: (
                Turn.objects.filter(target_actor_id=actor, status__in=IN_FLIGHT_STATUSES, enqueue_seq__lt=10**9)
                .order_by("enqueue_seq")
                .values_list("turn_id", flat=True)
                .first()
            ),
        ),
        "insert_turn": (lambda: turn_sql.insert_turn(**turn_values()), lambda: Turn.objects.create(**turn_values())),
        # memory/sql.py
        "bump_dated_rollup": (
            lambda: memory_sql.bump_dated_rollup(
                room_id=ROOM_ID, actor_id=actor, day=date(2026, 1, 1), chars=5, through_seq=7, now=now
            ),
            lambda: DatedMemoryRollup.objects.filter(
                room_id=ROOM_ID, actor_id=actor, local_date=date(2026, 1, 1)
            ).update(
                pending_turns=F("pending_turns") + 1,
                pending_chars=F("pending_chars") + 5,
                pending_through_seq=Greatest("pending_through_seq", Value(7)),
                first_pending_at=Coalesce("first_pending_at", Value(now)),
                last_pending_at=now,
            ),
        ),
        "packet_memory": (
            lambda: memory_sql.packet_memory(actor_id=actor, room_id=ROOM_ID, correlations={"c1", "c2"}, limit=51),
            orm_memory,
        ),
        "packet_identity": (
            lambda: memory_sql.packet_identity(actor_id=actor, limit=51),
            lambda: list(IdentityRecord.objects.filter(status="active", subject_actor_id=actor).order_by("-id")[:51]),
        ),
        "packet_prelude": (
            lambda: memory_sql.packet_prelude(actor_id=actor, room_id=ROOM_ID, source_event_id=source.event_id),
            orm_prelude,
        ),
        "packet_unread": (lambda: list(memory_sql.packet_unread(**unread)), lambda: list(unread_qs().values(*cols))),
        "packet_unread_count": (lambda: memory_sql.packet_unread_count(**unread), lambda: unread_qs().count()),
        "packet_parent": (
            lambda: memory_sql.packet_parent(source.event_id, 0),
            lambda: (
                Event.objects.filter(event_id=source.event_id, event_type__in=CONTEXT_TYPES, seq__gt=0)
                .values(*cols)
                .first()
            ),
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="groupx-sql-orm-") as tmp:
        from bench.turn_cost import Turns, _configure

        _configure(Path(tmp))
        from django.db import transaction

        turns = Turns()
        for _ in range(args.turns):
            turns.run_one(lambda name, fn, *a, **kw: fn(*a, **kw))
        print(f"{'statement':<22}{'SQL µs':>9}{'ORM µs':>9}{'ORM/SQL':>9}")
        with transaction.atomic():
            for name, (by_sql, by_orm) in _cases().items():
                samples = {by_sql: [], by_orm: []}
                for _ in range(args.repeat):
                    for fn in (by_sql, by_orm):
                        cpu = time.thread_time_ns()
                        fn()
                        samples[fn].append(time.thread_time_ns() - cpu)
                sql_us, orm_us = (statistics.median(samples[fn]) / 1000 for fn in (by_sql, by_orm))
                print(f"{name:<22}{sql_us:>9.0f}{orm_us:>9.0f}{orm_us / sql_us:>9.1f}")
            transaction.set_rollback(True)


if __name__ == "__main__":
    main()

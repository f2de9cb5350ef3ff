"""What the trimmed paths of a Turn write and send is what they wrote and sent before
(docs/DECISIONS.md D64): the JSON text of frames and responses, the Event an append returns and
the frame it hands to the streams."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest
from django.db import connection, transaction

from groupx_site.core.text import json_text, repair
from rooms import bus, events
from rooms.models import Event
from rooms.tail import read_frames, transient_frame

LONE = json.loads('"\\ud800"')


@pytest.mark.parametrize(
    "value",
    [
        {"content": "plain, 汉字, 😀 and \u2028", "n": 1, "f": 1e-07, "g": 1e16, "h": 0.1, "t": True, "z": None},
        {"nan": float("nan"), "inf": float("inf"), 3: "an int key", "tuple": (1, 2), "big": 2**80},
        [{"nested": [{"deep": ['\x00\x1f"\\']}]}],
        {"bad": f"a lone {LONE} half"},
        "a string",
        12,
        None,
    ],
)
def test_json_text_writes_what_json_dumps_with_compact_separators_writes(value):
    assert json_text(value) == repair(json.dumps(value, ensure_ascii=False, separators=(",", ":")))[0]


class Member:
    """A bus member that is never woken here (the test's transaction never commits): its presence
    makes a commit hand its frame over, as a stream's does."""

    loop = None


def append(**fields) -> tuple[Event, bytes]:
    member = Member()
    bus.join(member)
    try:
        with transaction.atomic():
            event = events.message_created(
                actor=events.WEB_USER, to=["agent:alpha"], correlation_id="corr_t", source_kind="web", **fields
            )
            _, hook, _ = connection.run_on_commit[-1]
    finally:
        bus.leave(member)
    assert hook.func is bus.committed and hook.args[0] == event.seq
    return event, hook.args[1]


@pytest.mark.parametrize(
    "fields",
    [
        {"content": 'hello ünïcode "quoted"\nline'},
        {
            "content": "a reply",
            "reply_to_event_id": "evt_parent",
            "idempotency_key": "k-1",
            "extra_body": {"turnId": "turn_1", "n": 1.5},
        },
    ],
)
def test_an_appended_event_is_the_instance_a_read_of_its_row_gives_and_its_frame_is_the_tails(fields):
    event, frame = append(**fields)
    stored = Event.objects.get(seq=event.seq)
    for field in Event._meta.concrete_fields:
        assert getattr(event, field.attname) == getattr(stored, field.attname), field.attname
    assert (event._state.adding, event._state.db) == (False, "default")
    assert isinstance(event.occurred_at, datetime) and event.occurred_at.tzinfo is UTC
    # The frame a stream gets from the commit is the one the tail encodes from the table (byte for
    # byte on SQLite; PostgreSQL's jsonb reads a body's keys back in an order of its own).
    [(seq, read)] = read_frames(event.seq - 1, 1)
    assert seq == event.seq
    if connection.vendor == "sqlite":
        assert read == frame
    else:
        assert json.loads(read.split(b"data: ", 1)[1]) == json.loads(frame.split(b"data: ", 1)[1])


def test_reading_the_config_through_the_settings_misses_no_attribute_of_the_model(monkeypatch):
    from django.conf import settings

    config = settings.GROUPX_CONFIG
    missed = []

    def missing(self, name):
        missed.append(name)
        raise AttributeError(name)

    monkeypatch.setattr(type(config), "__getattr__", missing)
    assert settings.GROUPX_CONFIG is config and settings.GROUPX_CONFIG.limits is config.limits
    assert missed == []
    assert "_mask_wrapped" not in config.model_dump() and "_mask_wrapped" not in type(config).model_json_schema()


@pytest.mark.parametrize(
    "envelope",
    [
        {"type": "turn.content.delta", "body": {"text": 'ünï "q" 😀', "chunkIndex": 3, "f": 1e-07}},
        {"type": "x", "body": {1: [None, True, 2**70, float("nan")], "bad": f"a lone {LONE} half"}},
    ],
)
def test_a_transient_reaches_every_member_as_one_encoding_the_text_of_its_frame(envelope):
    # D70: the bus encoded each delta twice (json.dumps's spaced text, only to measure it, then the
    # tail's frame); now once, and a reader's byte budget counts the text its frame carries.
    offered: list[tuple[dict, str]] = []

    async def publish() -> None:
        both = asyncio.Event()

        class Member:
            loop = asyncio.get_running_loop()

            def _offer_transient(self, envelope, text):
                offered.append((envelope, text))
                if len(offered) == 2:
                    both.set()

        members = [Member(), Member()]
        for member in members:
            bus.join(member)
        try:
            bus.publish_transient(envelope)
            await asyncio.wait_for(both.wait(), 30)
        finally:
            for member in members:
                bus.leave(member)

    asyncio.run(publish())
    assert len(offered) == 2 and offered[0][1] is offered[1][1]
    assert offered[0][1] == json_text(envelope)
    assert transient_frame(envelope) == f"data: {offered[0][1]}\n\n"

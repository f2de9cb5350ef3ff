"""Identity records, the compatibility layer of FEATURES §15.4 (PROTOCOL §10.4, §12).

The web writes about any agent as ``user:web``; an agent's ``identity_remember`` is always about
itself, so the self perspective (author = subject) cannot be forged by someone else. Same command
shape as memory: receipt, lookups, write and ``identity.*`` event in one transaction.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from groupx_site.core.errors import invalid
from memory.actions import check_actor, run_as
from memory.inputs import IdentityWrite, Supersede
from memory.models import IdentityRecord
from memory.records import (
    IDENTITY_ID_RE,
    Writer,
    check_record_id,
    identity_json,
    new_identity_id,
    not_active,
    record_event,
    unknown_record,
)
from rooms import event_types
from rooms.actions import check_references_exist


def _active(identity_id: str) -> IdentityRecord:
    record = IdentityRecord.objects.filter(identity_id=identity_id).first()
    if record is None:
        raise unknown_record("identity record", identity_id)
    if record.status != "active":
        raise not_active("identity record", identity_id, record.status)
    return record


def _check_self(writer: Writer, subject: str) -> None:
    if writer.is_agent and subject != writer.actor.actor_id:
        raise invalid("an agent may write only its own identity")


def remember_identity(writer: Writer, command: IdentityWrite) -> dict[str, Any]:
    subject = command.subject_actor_id or writer.actor.actor_id
    _check_self(writer, subject)

    def run() -> dict[str, Any]:
        check_actor(subject, agent=True)
        check_references_exist(command.source_event_id)
        record = do_remember_identity(
            writer, subject=subject, kind=command.kind, content=command.content, source_event_id=command.source_event_id
        )
        return {"identity": identity_json(record)}

    return run_as(
        writer,
        command.client_command_id,
        "identity.remember",
        {**command.canonical(), "subject_actor_id": subject},
        run,
    )


def supersede_identity(writer: Writer, identity_id: str, command: Supersede) -> dict[str, Any]:
    check_record_id(identity_id, IDENTITY_ID_RE, "identityId")

    def run() -> dict[str, Any]:
        old = _active(identity_id)
        _check_self(writer, old.subject_actor_id)
        check_references_exist(command.source_event_id)
        if IdentityRecord.objects.filter(pk=old.pk, status="active").update(status="superseded") != 1:
            raise not_active("identity record", identity_id, "changed")
        new = do_remember_identity(
            writer,
            subject=old.subject_actor_id,
            kind=command.kind or old.kind,
            content=command.content,
            source_event_id=command.source_event_id,
            supersedes=old.identity_id,
        )
        return {"identity": identity_json(new)}

    canonical = {"identityId": identity_id, **command.canonical()}
    return run_as(writer, command.client_command_id, "identity.supersede", canonical, run)


def retract_identity(writer: Writer, identity_id: str, client_command_id: str) -> dict[str, Any]:
    check_record_id(identity_id, IDENTITY_ID_RE, "identityId")

    def run() -> dict[str, Any]:
        record = _active(identity_id)
        _check_self(writer, record.subject_actor_id)
        IdentityRecord.objects.filter(pk=record.pk, status="active").update(
            status="retracted", retracted_at=timezone.now()
        )
        record.refresh_from_db()
        record_event(
            event_type=event_types.IDENTITY_RETRACTED,
            writer=writer,
            body={"record": identity_json(record)},
            record_id=record.identity_id,
            subject=record.subject_actor_id,
            source_event_id=record.source_event_id,
        )
        return {"identity": identity_json(record)}

    return run_as(writer, client_command_id, "identity.retract", {"identityId": identity_id}, run)


def do_remember_identity(
    writer: Writer, *, subject: str, kind: str, content: str, source_event_id: str | None, supersedes: str | None = None
) -> IdentityRecord:
    record = IdentityRecord.objects.create(
        identity_id=new_identity_id(),
        subject_actor_id=subject,
        author_actor_id=writer.actor.actor_id,
        kind=kind,
        content=content,
        source_event_id=source_event_id,
        source_kind=writer.source_kind,
        status="active",
        supersedes_identity_id=supersedes,
        created_at=timezone.now(),
    )
    body: dict[str, Any] = {"record": identity_json(record)}
    if supersedes:
        body["supersededIdentityId"] = supersedes
    event_type = event_types.IDENTITY_SUPERSEDED if supersedes else event_types.IDENTITY_REMEMBERED
    record_event(
        event_type=event_type,
        writer=writer,
        body=body,
        record_id=record.identity_id,
        subject=subject,
        source_event_id=source_event_id,
    )
    return record

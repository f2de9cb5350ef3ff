"""Memory, identity, summaries and dated rollups for operators: read-mostly.

Rows are never edited here. The two admin actions, retract and supersede, call the same actions
as ``/api/memory`` and ``/api/identity`` (receipt, compare-and-set, durable ``memory.*`` /
``identity.*`` event), as the local user (``user:web``, sourceKind ``web``): the admin is the
person at this machine's browser, like the room page.
"""

from __future__ import annotations

import uuid

from django import forms
from django.contrib import admin, messages
from django.template.response import TemplateResponse

from groupx_site.core.errors import GroupXError
from memory import actions, identity
from memory.inputs import Supersede
from memory.models import (
    ContextReset,
    DatedMemoryRollup,
    DatedMemorySource,
    IdentityRecord,
    MemoryRecord,
    Summary,
)
from memory.records import WEB_WRITER
from rooms.admin import ReadOnlyAdmin


def _command_id() -> str:
    return f"admin-{uuid.uuid4()}"


class SupersedeForm(forms.Form):
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 10, "cols": 90}), max_length=131_072)


def _retract(modeladmin, request, queryset, retract, id_field: str) -> None:
    done = 0
    for record in queryset:
        try:
            retract(WEB_WRITER, getattr(record, id_field), _command_id())
            done += 1
        except GroupXError as error:
            modeladmin.message_user(
                request, f"{getattr(record, id_field)}: {error.code} {error.message}", messages.ERROR
            )
    if done:
        modeladmin.message_user(request, f"Retracted {done} record(s).", messages.SUCCESS)


def _supersede(modeladmin, request, queryset, supersede, id_field: str, action_name: str):
    """First call: a form for the new text; second call (``apply``): the supersede itself. The kind,
    scope and subject stay those of the record."""
    if queryset.count() != 1:
        modeladmin.message_user(request, "Select exactly one record to supersede.", messages.WARNING)
        return None
    record = queryset.get()
    form = SupersedeForm(request.POST if "apply" in request.POST else None)
    if "apply" in request.POST and form.is_valid():
        command = Supersede(_command_id(), None, form.cleaned_data["content"], None)
        try:
            result = supersede(WEB_WRITER, getattr(record, id_field), command)
        except GroupXError as error:
            modeladmin.message_user(request, f"{error.code}: {error.message}", messages.ERROR)
            return None
        new_id = next(iter(result.values()))[id_field.replace("_id", "Id")]
        modeladmin.message_user(request, f"Superseded by {new_id}.", messages.SUCCESS)
        return None
    return TemplateResponse(
        request,
        "admin/memory/supersede.html",
        {
            **modeladmin.admin_site.each_context(request),
            "title": "Supersede a record",
            "form": form,
            "record_id": getattr(record, id_field),
            "current_content": record.content,
            "pk": record.pk,
            "action_name": action_name,
            "opts": modeladmin.model._meta,
        },
    )


@admin.register(MemoryRecord)
class MemoryRecordAdmin(ReadOnlyAdmin):
    list_display = (
        "memory_id",
        "scope_type",
        "scope_id",
        "agent_memory_type",
        "kind",
        "status",
        "author_actor_id",
        "subject_actor_id",
        "source_kind",
        "created_at",
    )
    list_filter = ("status", "scope_type", "agent_memory_type", "kind", "source_kind")
    search_fields = ("memory_id", "scope_id", "author_actor_id", "subject_actor_id", "content")
    actions = ["retract_records", "supersede_record"]

    @admin.action(description="Retract the selected records")
    def retract_records(self, request, queryset):
        _retract(self, request, queryset, actions.retract_memory, "memory_id")

    @admin.action(description="Supersede the selected record with new text")
    def supersede_record(self, request, queryset):
        return _supersede(self, request, queryset, actions.supersede_memory, "memory_id", "supersede_record")


@admin.register(IdentityRecord)
class IdentityRecordAdmin(ReadOnlyAdmin):
    list_display = ("identity_id", "subject_actor_id", "author_actor_id", "kind", "status", "source_kind", "created_at")
    list_filter = ("status", "kind", "source_kind", "subject_actor_id")
    search_fields = ("identity_id", "subject_actor_id", "author_actor_id", "content")
    actions = ["retract_records", "supersede_record"]

    @admin.action(description="Retract the selected records")
    def retract_records(self, request, queryset):
        _retract(self, request, queryset, identity.retract_identity, "identity_id")

    @admin.action(description="Supersede the selected record with new text")
    def supersede_record(self, request, queryset):
        return _supersede(self, request, queryset, identity.supersede_identity, "identity_id", "supersede_record")


@admin.register(Summary)
class SummaryAdmin(ReadOnlyAdmin):
    list_display = ("summary_id", "status", "from_seq", "through_seq", "generator_actor_id", "created_at")
    list_filter = ("status", "generator_actor_id")


@admin.register(ContextReset)
class ContextResetAdmin(ReadOnlyAdmin):
    list_display = ("reset_id", "through_seq", "reset_native_sessions", "created_at")


@admin.register(DatedMemoryRollup)
class DatedMemoryRollupAdmin(ReadOnlyAdmin):
    list_display = (
        "actor_id",
        "local_date",
        "memory_id",
        "pending_turns",
        "pending_chars",
        "failure_count",
        "next_attempt_at",
        "last_error_code",
        "updated_at",
    )
    list_filter = ("actor_id", "local_date")


@admin.register(DatedMemorySource)
class DatedMemorySourceAdmin(ReadOnlyAdmin):
    list_display = (
        "turn_id",
        "actor_id",
        "local_date",
        "source_seq",
        "response_seq",
        "source_chars",
        "processed_at",
        "memory_id",
    )
    list_filter = ("actor_id", "local_date")

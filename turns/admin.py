"""Turns, attempts and supervision pairs for operators: filter by status and agent. Nothing is
saved here; the one write, "Cancel", runs the same command as ``POST /api/turns/{turnId}/cancel``
(``turns.actions.accept_cancel``) as the local user (``user:web``)."""

import uuid
from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from groupx_site.core.errors import GroupXError
from rooms.admin import ReadOnlyAdmin
from turns.actions import accept_cancel
from turns.models import SupervisionPair, SupervisionPairTurn, SupervisionSteerCount, Turn, TurnAttempt
from turns.states import TERMINAL_STATUSES

if TYPE_CHECKING:  # the stubs' admin classes are generic; Django's cannot be subscripted at run time
    _AttemptInline = admin.TabularInline[TurnAttempt, Turn]
    _PairTurnInline = admin.TabularInline[SupervisionPairTurn, SupervisionPair]
else:
    _AttemptInline = _PairTurnInline = admin.TabularInline


class AttemptInline(_AttemptInline):
    model = TurnAttempt
    extra = 0
    can_delete = False
    readonly_fields = (
        "attempt_id",
        "dispatch_phase",
        "delivery_certainty",
        "instance_id",
        "native_turn_id",
        "context_through_seq",
        "claimed_at",
        "prompt_invoked_at",
        "started_at",
        "terminal_at",
    )
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Turn)
class TurnAdmin(ReadOnlyAdmin):
    list_display = ("turn_id", "target_actor_id", "status", "error_code", "hop_count", "queued_at", "terminal_at")
    list_filter = ("status", "target_actor_id", "command_type", "error_code")
    search_fields = ("turn_id", "source_event_id", "correlation_id", "root_correlation_id")
    inlines = [AttemptInline]
    ordering = ("-enqueue_seq",)
    actions = ["cancel_turns"]

    @admin.action(description="Cancel the selected Turns (queued ones at once, running ones through their CLI)")
    def cancel_turns(self, request: HttpRequest, queryset: QuerySet[Turn]) -> None:
        asked, ended = [], []
        for turn_id, status in queryset.values_list("turn_id", "status"):
            if status in TERMINAL_STATUSES:
                ended.append(f"{turn_id} ({status})")
                continue
            try:
                answer = accept_cancel(turn_id, f"admin-cancel-{uuid.uuid4()}")
            except GroupXError as error:
                self.message_user(request, f"{turn_id}: {error.code} {error.message}", messages.ERROR)
                continue
            asked.append(f"{turn_id} ({answer['status']})")
        if asked:
            self.message_user(request, f"Cancel asked for {', '.join(asked)}.", messages.SUCCESS)
        if ended:
            self.message_user(request, f"Already ended, left as they were: {', '.join(ended)}.", messages.WARNING)


@admin.register(TurnAttempt)
class TurnAttemptAdmin(ReadOnlyAdmin):
    list_display = ("attempt_id", "turn", "dispatch_phase", "delivery_certainty", "claimed_at")
    list_filter = ("dispatch_phase", "delivery_certainty")
    search_fields = ("attempt_id", "turn__turn_id")


class PairTurnInline(_PairTurnInline):
    model = SupervisionPairTurn
    extra = 0
    can_delete = False
    readonly_fields = ("turn_id", "role", "actor_id", "status", "steers", "created_at")
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="status")
    def status(self, row: SupervisionPairTurn) -> str:
        return Turn.objects.filter(turn_id=row.turn_id).values_list("status", flat=True).first() or "-"

    @admin.display(description="steers")
    def steers(self, row: SupervisionPairTurn) -> int:
        return (
            SupervisionSteerCount.objects.filter(subject_turn_id=row.turn_id)
            .values_list("steer_count", flat=True)
            .first()
            or 0
        )


@admin.register(SupervisionPair)
class SupervisionPairAdmin(ReadOnlyAdmin):
    list_display = ("pair_id", "mode", "correlation_id", "source_event_id", "created_at")
    search_fields = ("pair_id", "correlation_id", "source_event_id", "turns__turn_id")
    inlines = [PairTurnInline]
    ordering = ("-created_at",)

"""Turns and attempts for operators: filter by status and agent; state changes go through the
API (cancel), never through a raw save here."""

from django.contrib import admin

from rooms.admin import ReadOnlyAdmin
from turns.models import Turn, TurnAttempt


class AttemptInline(admin.TabularInline):
    model = TurnAttempt
    extra = 0
    can_delete = False
    readonly_fields = ("attempt_id", "dispatch_phase", "delivery_certainty", "instance_id", "native_turn_id",
                       "context_through_seq", "claimed_at", "prompt_invoked_at", "started_at", "terminal_at")
    fields = readonly_fields

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Turn)
class TurnAdmin(ReadOnlyAdmin):
    list_display = ("turn_id", "target_actor_id", "status", "error_code", "hop_count", "queued_at", "terminal_at")
    list_filter = ("status", "target_actor_id", "command_type", "error_code")
    search_fields = ("turn_id", "source_event_id", "correlation_id", "root_correlation_id")
    inlines = [AttemptInline]
    ordering = ("-enqueue_seq",)


@admin.register(TurnAttempt)
class TurnAttemptAdmin(ReadOnlyAdmin):
    list_display = ("attempt_id", "turn", "dispatch_phase", "delivery_certainty", "claimed_at")
    list_filter = ("dispatch_phase", "delivery_certainty")
    search_fields = ("attempt_id", "turn__turn_id")

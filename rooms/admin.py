"""Read-mostly admin for the durable log and the idempotency receipts: the log is append-only,
so nothing here edits or deletes a row."""

from django.contrib import admin

from rooms.models import ClientCommand, Event


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ("seq", "event_type", "actor_id", "targets", "correlation_id", "occurred_at")
    list_filter = ("event_type", "actor_kind", "actor_id")
    search_fields = ("event_id", "correlation_id", "root_correlation_id", "causation_id")
    ordering = ("-seq",)


@admin.register(ClientCommand)
class ClientCommandAdmin(ReadOnlyAdmin):
    list_display = ("client_command_id", "command_type", "source_binding_id", "accepted_at")
    list_filter = ("command_type", "source_binding_id")
    search_fields = ("client_command_id", "command_id")

from django.contrib import admin

from agents.models import Actor, AgentInstance, DeliveryCursor, SessionBinding
from rooms.admin import ReadOnlyAdmin


@admin.register(Actor)
class ActorAdmin(ReadOnlyAdmin):
    list_display = ("actor_id", "kind", "display_name", "enabled", "updated_at")
    list_filter = ("kind", "enabled")


@admin.register(AgentInstance)
class AgentInstanceAdmin(ReadOnlyAdmin):
    list_display = ("instance_id", "actor", "driver", "status", "process_started_at", "process_ended_at")
    list_filter = ("status", "driver")


@admin.register(SessionBinding)
class SessionBindingAdmin(ReadOnlyAdmin):
    list_display = ("binding_id", "actor", "protocol", "status", "native_session_id", "created_at", "closed_at")
    list_filter = ("status", "protocol")


@admin.register(DeliveryCursor)
class DeliveryCursorAdmin(ReadOnlyAdmin):
    list_display = ("actor", "room_id", "last_delivered_seq", "last_summary_seq", "updated_at")

"""Who is in the room, for operators: read-only, except "Restart", which runs the same command as
the room page's Restart button (``agents/restart.py``) as the local user (``user:web``)."""

import uuid

from django.contrib import admin, messages

from agents.models import Actor, AgentInstance, DeliveryCursor, SessionBinding
from agents.restart import restart_agent
from groupx_site.core.errors import GroupXError
from groupx_site.core.ids import WEB_BINDING_ID
from rooms.admin import ReadOnlyAdmin


@admin.register(Actor)
class ActorAdmin(ReadOnlyAdmin):
    list_display = ("actor_id", "kind", "display_name", "enabled", "updated_at")
    list_filter = ("kind", "enabled")
    actions = ["restart_agents"]

    @admin.action(description="Restart the selected agents' CLIs (a running Turn is interrupted)")
    def restart_agents(self, request, queryset):
        restarted = []
        for actor_id in queryset.values_list("actor_id", flat=True):
            try:
                restart_agent(WEB_BINDING_ID, actor_id, {"clientCommandId": f"admin-restart-{uuid.uuid4()}"})
                restarted.append(actor_id)
            except GroupXError as error:
                self.message_user(request, f"{actor_id}: {error.code} {error.message}", messages.ERROR)
        if restarted:
            self.message_user(request, f"Restarting {', '.join(restarted)}; the room shows the new instances.",
                              messages.SUCCESS)


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

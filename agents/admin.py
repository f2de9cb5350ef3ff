"""Who is in the room, for operators: read-only, except "Restart", which runs the same command as
the room page's Restart button (``agents/restart.py``) as the local user (``user:web``). Who runs
the agents (the workers' rows and each agent's lease, D45, D58) is shown read-only, so a stuck
split-mode room can be read here as well as from ``/api/health``."""

import socket
import uuid

from django.contrib import admin, messages
from django.utils import timezone

from agents.agent_leases import is_gone
from agents.models import Actor, AgentInstance, AgentLease, DeliveryCursor, RuntimeWorker, SessionBinding
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
            self.message_user(
                request, f"Restarting {', '.join(restarted)}; the room shows the new instances.", messages.SUCCESS
            )


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


def _live(worker: RuntimeWorker | None) -> bool:
    # The rule the leases themselves follow (agents/agent_leases.py): not stopped, not expired, and
    # on this host its process still there.
    return worker is not None and not is_gone(worker, timezone.now(), socket.gethostname())


@admin.register(RuntimeWorker)
class RuntimeWorkerAdmin(ReadOnlyAdmin):
    list_display = ("worker_id", "mode", "role", "live", "host", "pid", "heartbeat_at", "expires_at")
    list_filter = ("role", "mode")
    ordering = ("-heartbeat_at",)

    @admin.display(boolean=True, description="live")
    def live(self, worker: RuntimeWorker) -> bool:
        return _live(worker)


@admin.register(AgentLease)
class AgentLeaseAdmin(ReadOnlyAdmin):
    list_display = ("actor_id", "worker_id", "held", "acquired_at")
    search_fields = ("actor_id", "worker_id")
    ordering = ("actor_id",)

    @admin.display(boolean=True, description="held (its worker is live)")
    def held(self, lease: AgentLease) -> bool:
        return bool(lease.worker_id) and _live(RuntimeWorker.objects.filter(worker_id=lease.worker_id).first())

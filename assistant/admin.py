"""The side chat with the room assistant, for operators: read-only (D47)."""

from django.contrib import admin

from assistant.models import AssistantMessage
from rooms.admin import ReadOnlyAdmin


@admin.register(AssistantMessage)
class AssistantMessageAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "role", "short_content", "outcome", "client_command_id")
    list_filter = ("role", "outcome")
    search_fields = ("content", "client_command_id")

    @admin.display(description="content")
    def short_content(self, message: AssistantMessage) -> str:
        return message.content[:120]

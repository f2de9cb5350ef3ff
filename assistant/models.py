"""The side chat with the room assistant (FEATURES §13, PROTOCOL §10.7): its own table, never a room
event or a Turn.

A user row carries the ``clientCommandId`` it was posted with; the assistant's reply points at the
user row it answers (at most one reply per user row, so a retried run never answers twice). A brain
that failed or was cancelled still answers, with a short failure message (``outcome`` says which).
"""

from __future__ import annotations

from django.db import models


class AssistantMessage(models.Model):
    ROLES = [("user", "user"), ("assistant", "assistant")]
    OUTCOMES = [("answered", "answered"), ("failed", "failed"), ("cancelled", "cancelled")]

    message_id = models.CharField(max_length=64, primary_key=True)
    role = models.CharField(max_length=16, choices=ROLES)
    content = models.TextField()
    client_command_id = models.CharField(max_length=128, null=True, blank=True, unique=True)
    reply_to = models.OneToOneField("self", on_delete=models.PROTECT, null=True, blank=True, related_name="reply")
    outcome = models.CharField(max_length=16, choices=OUTCOMES, null=True, blank=True)
    error_code = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        db_table = "assistant_conversation_messages"
        ordering = ["created_at", "message_id"]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"

"""Turns and their dispatch attempts (PROTOCOL §2.1, §5).

A Turn is one wake-up of one agent for one source event. Its ``status`` moves only as
``turns.states.TRANSITIONS`` allows (``turns.transitions.move_turn``). An attempt records how far the prompt got (``dispatch_phase``) and what we know
about delivery (``delivery_certainty``); restart recovery reads both and never re-sends a prompt
that may have been delivered.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from turns.states import ACTIVE_STATUSES, TURN_STATUSES


class Turn(models.Model):
    turn_id = models.CharField(max_length=64, primary_key=True)
    source_event_id = models.CharField(max_length=64)
    target_actor_id = models.CharField(max_length=128)
    adapter_id = models.CharField(max_length=64)
    transport = models.CharField(max_length=16, default="structured")
    command_type = models.CharField(max_length=32, default="web.message")
    binding_id = models.CharField(max_length=128, null=True, blank=True)
    native_turn_id = models.CharField(max_length=256, null=True, blank=True)
    parent_turn = models.ForeignKey("self", on_delete=models.PROTECT, null=True, blank=True, related_name="children")
    correlation_id = models.CharField(max_length=64)
    root_correlation_id = models.CharField(max_length=64)
    hop_count = models.IntegerField(default=0)
    queued_event_id = models.CharField(max_length=64, unique=True)
    enqueue_seq = models.BigIntegerField()
    status = models.CharField(max_length=16, choices=[(s, s) for s in TURN_STATUSES], default="queued")
    partial_text = models.TextField(blank=True, default="")
    response_event_id = models.CharField(max_length=64, null=True, blank=True)
    terminal_event_id = models.CharField(max_length=64, null=True, blank=True)
    error_code = models.CharField(max_length=64, null=True, blank=True)
    queued_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    terminal_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["enqueue_seq"]
        constraints = [
            # PROTOCOL §8.2: one Turn per (source message, target); a repeat cannot wake it twice.
            models.UniqueConstraint(fields=["source_event_id", "target_actor_id"], name="turns_dispatch_once"),
        ]
        indexes = [
            models.Index(fields=["target_actor_id", "status", "enqueue_seq"], name="turns_lane"),
            models.Index(fields=["status"], name="turns_status"),
            models.Index(fields=["root_correlation_id"], name="turns_root"),
        ]

    def __str__(self) -> str:
        return f"{self.turn_id} → {self.target_actor_id} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATUSES


class TurnAttempt(models.Model):
    PHASES = ["prepared", "prompt_invoked", "native_started", "terminal"]
    CERTAINTIES = ["not_delivered", "delivered", "unknown"]

    attempt_id = models.CharField(max_length=64, primary_key=True)
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="attempts")
    binding_id = models.CharField(max_length=128, null=True, blank=True)
    instance_id = models.CharField(max_length=128, null=True, blank=True)
    context_through_seq = models.BigIntegerField(default=0)
    summary_through_seq = models.BigIntegerField(null=True, blank=True)
    native_turn_id = models.CharField(max_length=256, null=True, blank=True)
    dispatch_phase = models.CharField(max_length=16, choices=[(p, p) for p in PHASES], default="prepared")
    delivery_certainty = models.CharField(max_length=16, choices=[(c, c) for c in CERTAINTIES], default="not_delivered")
    claimed_at = models.DateTimeField()
    prompt_invoked_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    terminal_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["claimed_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["turn"], condition=~Q(dispatch_phase="terminal"), name="turn_attempts_one_open_per_turn"
            )
        ]

    def __str__(self) -> str:
        return f"{self.attempt_id} ({self.dispatch_phase}, {self.delivery_certainty})"


# ---- supervision pairing (FEATURES §12, §18; docs/DECISIONS.md D40) --------------------------------
# The tables keep the spec's names: a pair is one command's rows, its roles live only here.


class SupervisionPair(models.Model):
    pair_id = models.CharField(max_length=64, primary_key=True)
    room_id = models.CharField(max_length=64)
    correlation_id = models.CharField(max_length=64)
    source_event_id = models.CharField(max_length=64)
    watch_event_id = models.CharField(max_length=64)
    pair_event_id = models.CharField(max_length=64)
    mode = models.CharField(max_length=16, default="live_steer")
    created_at = models.DateTimeField()

    class Meta:
        db_table = "supervision_pairs"


class SupervisionPairTurn(models.Model):
    ROLES = ["worker", "observer"]

    turn_id = models.CharField(max_length=64, primary_key=True)
    pair = models.ForeignKey(SupervisionPair, on_delete=models.CASCADE, related_name="turns")
    role = models.CharField(max_length=8, choices=[(r, r) for r in ROLES])
    actor_id = models.CharField(max_length=128)
    created_at = models.DateTimeField()

    class Meta:
        db_table = "supervision_pair_turns"
        indexes = [models.Index(fields=["pair", "role"], name="supervision_pair_role")]


class SupervisionSteerCount(models.Model):
    subject_turn_id = models.CharField(max_length=64, primary_key=True)
    steer_count = models.IntegerField(default=0)

    class Meta:
        db_table = "supervision_steer_counts"

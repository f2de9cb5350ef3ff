"""Database side of agent launches: instances, bindings and their lineage (sync ORM functions)."""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Collection
from typing import Any

from django.db import transaction
from django.utils import timezone

from agents.models import AgentInstance, SessionBinding
from groupx_site.core.driver_table import protocol_label
from memory import native_reset


def create_launch(actor_id: str, driver: str, cwd: str) -> tuple[str, str]:
    """A new instance and an unguessable binding, registered before the process starts (a CLI that
    connects to MCP while starting must already find its binding)."""
    instance_id = f"{actor_id.split(':', 1)[1]}/main@{secrets.token_hex(6)}"
    binding_id = f"bind_{secrets.token_urlsafe(24)}"
    with transaction.atomic():
        instance = AgentInstance.objects.create(
            instance_id=instance_id,
            actor_id=actor_id,
            adapter_id=driver,
            driver=driver,
            transport="structured",
            status="starting",
            process_started_at=timezone.now(),
        )
        SessionBinding.objects.create(
            binding_id=binding_id,
            instance=instance,
            actor_id=actor_id,
            transport="structured",
            protocol=protocol_label(driver),
            status="active",
            cwd=cwd,
        )
    return instance_id, binding_id


def mark_ready(instance_id: str, binding_id: str, *, native_session_id: str, mcp_verified: bool, resumed: bool) -> None:
    with transaction.atomic():
        AgentInstance.objects.filter(instance_id=instance_id).update(status="ready")
        SessionBinding.objects.filter(binding_id=binding_id).update(
            native_session_id=native_session_id,
            last_ready_at=timezone.now(),
            capabilities={"mcp": "verified" if mcp_verified else "unavailable", "resumed": resumed},
        )


def record_mcp(binding_id: str, verified: bool) -> None:
    """The binding's MCP as its CLI now reports it (``agents/mcp_status.py``); what the member MCP
    server reads to answer ``MCP_UNAVAILABLE``."""
    with transaction.atomic():
        binding = SessionBinding.objects.select_for_update().get(binding_id=binding_id)
        binding.capabilities = {**(binding.capabilities or {}), "mcp": "verified" if verified else "unavailable"}
        binding.save(update_fields=["capabilities"])


def mark_closed(instance_id: str, binding_id: str, status: str = "stopped") -> None:
    now = timezone.now()
    with transaction.atomic():
        AgentInstance.objects.filter(instance_id=instance_id).update(status=status, process_ended_at=now)
        SessionBinding.objects.filter(binding_id=binding_id, status="active").update(status="closed", closed_at=now)


def resume_candidate(actor_id: str, driver: str, cwd: str) -> tuple[str | None, int]:
    """(the native session to resume, the native-reset mark it was chosen under), in one read.

    The candidate is the newest native session this actor had with the same driver and cwd,
    unless it was born before the latest native reset (docs/DECISIONS.md D41): a native id that
    any binding created before that reset carried is never resumed again, though it stays recorded."""
    candidates = SessionBinding.objects.filter(
        actor_id=actor_id, protocol=protocol_label(driver), cwd=cwd, native_session_id__isnull=False
    )
    with transaction.atomic():  # one snapshot: the mark and the candidate agree
        mark, reset_at = native_reset.latest()
        if reset_at is not None:
            born_before = SessionBinding.objects.filter(
                actor_id=actor_id, created_at__lte=reset_at, native_session_id__isnull=False
            ).values("native_session_id")
            candidates = candidates.exclude(native_session_id__in=born_before)
        return candidates.order_by("-last_ready_at").values_list("native_session_id", flat=True).first(), mark


def current_instance_id(actor_id: str) -> str | None:
    """The instance of the agent's open binding (running or starting), if it has one."""
    return (
        SessionBinding.objects.filter(actor_id=actor_id, status="active", transport="structured")
        .order_by("-created_at")
        .values_list("instance_id", flat=True)
        .first()
    )


def close_stale_launches(only: Collection[str] | None = None, besides: Collection[str] = ()) -> int:
    """On start: every agent binding of a previous process is closed (its process is gone). A
    worker that runs some agents (docs/DECISIONS.md D58) closes those of ``only`` when it takes
    them, and with the room's lease those of every actor but ``besides`` (the agents, whose
    bindings are their own holders')."""
    now = timezone.now()
    with transaction.atomic():
        stale = SessionBinding.objects.filter(status="active", transport="structured").exclude(actor_id__in=besides)
        if only is not None:
            stale = stale.filter(actor_id__in=only)
        AgentInstance.objects.filter(bindings__in=stale, process_ended_at__isnull=True).update(
            status="stopped", process_ended_at=now
        )
        return stale.update(status="closed", closed_at=now)


def match_active_binding(presented: bytes) -> dict[str, Any] | None:
    """The active agent binding whose id is ``presented`` (``binding_id``, ``capabilities``), or None.

    The presented token is a secret and never reaches an SQL comparison, whose time would depend on
    how much of it matches (D39): the active agent bindings, one per live agent session, are read by
    status, and every one is compared with ``hmac.compare_digest``, without stopping at a match.
    """
    rows = SessionBinding.objects.filter(status="active", actor__kind="agent").values("binding_id", "capabilities")
    found = None
    for row in rows:
        if hmac.compare_digest(row["binding_id"].encode(), presented):
            found = row
    return found

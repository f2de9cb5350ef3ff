"""The brain's per-session token for ``/mcp/operator`` (FEATURES §13, PROTOCOL §12; D39, D47).

The operator surface acts as ``binding:operator`` (author ``user:assistant``), but that fixed id is
written in the code and in every database: presented alone it is refused. Each brain launch gets a
fresh, unguessable token, stored as an active ``SessionBinding`` of ``user:assistant`` (transport
``structured``, instance adapter ``__assistant__``) so that any process reading the store can
check it (the split mode of D47), closed when the session ends and swept with every agent
binding at the next start (``agents.instances.close_stale_launches``). The token travels to the
CLI the way an agent's binding does (the driver's MCP descriptor, never a command line; D39) and
is compared in constant time against every open operator token.
"""

from __future__ import annotations

import hmac
import secrets

from django.db import transaction
from django.utils import timezone

from agents.models import AgentInstance, SessionBinding

ASSISTANT_ACTOR_ID = "user:assistant"
ADAPTER_ID = "__assistant__"


def create_launch(driver: str, cwd: str) -> tuple[str, str]:
    """A new brain instance and its token, registered before the CLI starts (it may connect to
    its MCP server while starting)."""
    instance_id = f"assistant/brain@{secrets.token_hex(6)}"
    token = f"bind_op_{secrets.token_urlsafe(24)}"
    with transaction.atomic():
        instance = AgentInstance.objects.create(
            instance_id=instance_id,
            actor_id=ASSISTANT_ACTOR_ID,
            adapter_id=ADAPTER_ID,
            driver=driver,
            transport="structured",
            status="starting",
            process_started_at=timezone.now(),
        )
        SessionBinding.objects.create(
            binding_id=token,
            instance=instance,
            actor_id=ASSISTANT_ACTOR_ID,
            transport="structured",
            protocol=ADAPTER_ID,
            status="active",
            cwd=cwd,
        )
    return instance_id, token


def match_operator_token(presented: bytes) -> bool:
    """True when ``presented`` is the token of an open brain session. Every open token is compared
    with ``hmac.compare_digest``, without stopping at a match (D39)."""
    tokens = SessionBinding.objects.filter(
        status="active", transport="structured", actor_id=ASSISTANT_ACTOR_ID
    ).values_list("binding_id", flat=True)
    found = False
    for token in tokens:
        found = hmac.compare_digest(token.encode(), presented) or found
    return found

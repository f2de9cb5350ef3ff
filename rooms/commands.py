"""Command idempotency (PROTOCOL §8.1): one receipt per (binding, clientCommandId)."""

from __future__ import annotations

import hashlib
from typing import Any

from django.utils import timezone

from groupx_site.errors import GroupXError
from rooms import hot_sql
from rooms.ids import new_id
from setup_wizard.config import canonical_json


def canonical_hash(command_type: str, payload: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json({"type": command_type, "payload": payload}).encode()).hexdigest()


def find_receipt(binding_id: str, client_command_id: str, command_type: str, digest: str) -> dict[str, Any] | None:
    """The stored result of an identical earlier command, None for a new one; a different payload
    under the same id is CLIENT_COMMAND_CONFLICT. Call inside the command's transaction."""
    # At most one row (a unique constraint): a fixed SELECT (rooms/hot_sql.py), every command pays it.
    receipt = hot_sql.find_receipt(binding_id, client_command_id)
    if receipt is None:
        return None
    stored_type, stored_hash, result = receipt
    if stored_type != command_type or stored_hash != digest:
        raise GroupXError(
            "CLIENT_COMMAND_CONFLICT",
            "this clientCommandId was already used for a different command",
            details={"clientCommandId": client_command_id},
        )
    return result


def store_receipt(binding_id: str, client_command_id: str, command_type: str, digest: str, result: dict) -> None:
    # The row ClientCommand.objects.create would write, as a fixed INSERT (rooms/hot_sql.py).
    hot_sql.insert_receipt(command_id=new_id("cmd"), binding_id=binding_id, client_command_id=client_command_id,
                           command_type=command_type, digest=digest, result=result, accepted_at=timezone.now())

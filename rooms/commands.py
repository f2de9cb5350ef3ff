"""Every state change is one command, run once (PROTOCOL §8.1; docs/DECISIONS.md D29).

A command has three parts:

- ``check_*``: the body only, no database. A malformed body is refused before any lock is taken.
- ``run_once``: one transaction holding the idempotency receipt of (binding, clientCommandId). A
  retry with the same canonical payload gets the stored result back and writes nothing; a different
  payload under the same id is CLIENT_COMMAND_CONFLICT; otherwise the command's lookups and its
  ``do_*`` run (``run``) and the receipt is stored with their result. A command refused inside
  ``run`` raises, so the transaction rolls back and no receipt is left: the same id may be retried.
- ``do_*``: the mutation, inside that transaction.

REST views and MCP tools call the command and hold no transaction of their own. Every transaction
is BEGIN IMMEDIATE (settings), so the receipt lookup, the checks and the write see one state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from groupx_site.core.errors import GroupXError
from groupx_site.core.ids import new_id
from rooms import sql
from setup_wizard.config import canonical_json


def canonical_hash(command_type: str, payload: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json({"type": command_type, "payload": payload}).encode()).hexdigest()


def run_once(
    *,
    binding_id: str,
    client_command_id: str,
    command_type: str,
    canonical: dict[str, Any],
    run: Callable[[], dict[str, Any]],
) -> dict[str, Any]:
    """``run()`` once per (binding, clientCommandId); its result, or the one stored by the first run.

    ``canonical``: the payload that identifies the command (without the clientCommandId)."""
    digest = canonical_hash(command_type, canonical)
    with transaction.atomic():
        stored = _stored_result(binding_id, client_command_id, command_type, digest)
        if stored is not None:
            return stored
        result = run()
        # The row ClientCommand.objects.create would write, as a fixed INSERT: every command pays
        # it, the hot post_message too (rooms/sql.py, docs/DECISIONS.md D20).
        sql.insert_receipt(
            command_id=new_id("cmd"),
            binding_id=binding_id,
            client_command_id=client_command_id,
            command_type=command_type,
            digest=digest,
            result=result,
            accepted_at=timezone.now(),
        )
    return result


def stored_result(
    *, binding_id: str, client_command_id: str, command_type: str, canonical: dict[str, Any]
) -> dict[str, Any] | None:
    """What ``run_once`` would replay, without running anything: for a command whose long work
    happens outside a transaction (a compaction runs a CLI) and is skipped when already done."""
    return _stored_result(binding_id, client_command_id, command_type, canonical_hash(command_type, canonical))


def _stored_result(binding_id: str, client_command_id: str, command_type: str, digest: str) -> dict[str, Any] | None:
    # At most one row (a unique constraint): a fixed SELECT (rooms/sql.py).
    receipt = sql.find_receipt(binding_id, client_command_id)
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

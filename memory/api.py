"""``/api/memory``, ``/api/identity`` and ``/api/context`` (PROTOCOL §10.4, §10.5): thin wrappers
over the memory actions, written as the web binding (author ``user:web``, sourceKind ``web``).
Bodies, queries and answers are the schemas of ``memory/schemas.py`` (docs/DECISIONS.md D34)."""

from __future__ import annotations

from typing import Annotated

from django.http import HttpRequest
from ninja import Path, Query, Router
from pydantic import WithJsonSchema

from groupx_site.core.contract import route
from groupx_site.core.ids import WEB_BINDING_ID
from groupx_site.core.json_response import json_response
from groupx_site.store import db
from memory import actions, engine, identity, search
from memory.compaction import FAILURE_CODES
from memory.records import IDENTITY_ID_RE, MEMORY_ID_RE, WEB_WRITER
from memory.schemas import (
    CompactBody,
    CompactResult,
    ContextUsage,
    IdentityListQuery,
    IdentityPage,
    IdentityResult,
    IdentitySupersedeBody,
    IdentityWriteBody,
    MemoryListQuery,
    MemoryPage,
    MemoryResult,
    MemorySupersedeBody,
    MemoryWriteBody,
    ResetBody,
    ResetResult,
    RetractBody,
)
from memory.usage import usage

router = Router(tags=["memory"])

# The pattern is documented, not enforced by ninja: the action checks it after the body (the
# protocol's order) and answers "memoryId is malformed" as before.
MemoryId = Path[Annotated[str, WithJsonSchema({"type": "string", "pattern": MEMORY_ID_RE.pattern})]]
IdentityId = Path[Annotated[str, WithJsonSchema({"type": "string", "pattern": IDENTITY_ID_RE.pattern})]]

LIST = {400: ("INVALID_ENVELOPE",)}
# A record that does not exist, one that is no longer active, a receipt for another body.
ON_A_RECORD = {404: ("UNKNOWN_TARGET",), 409: ("STORE_CONFLICT", "CLIENT_COMMAND_CONFLICT")}
# The scope or subject names nobody, or a correlation or room that does not exist.
REMEMBER = {404: ("UNKNOWN_ACTOR", "UNKNOWN_TARGET"), 409: ("CLIENT_COMMAND_CONFLICT",)}


@router.get(
    "/memory",
    summary="List or search memory records (newest first, offset cursor)",
    **route({200: MemoryPage}, errors=LIST),
)
async def get_memory(request: HttpRequest, query: Query[MemoryListQuery]):
    return json_response(await db.read(search.list_memory)(query.checked))


@router.post(
    "/memory",
    summary="Remember: a room, correlation or agent-core record",
    **route({201: MemoryResult}, write=True, body=True, errors=REMEMBER),
)
async def post_memory(request: HttpRequest, body: MemoryWriteBody):
    return json_response(await db.write(actions.remember_memory)(WEB_WRITER, body.checked), 201)


@router.post(
    "/memory/{memory_id}/supersede",
    summary="Write a new version of an active record",
    **route({201: MemoryResult}, write=True, body=True, errors=ON_A_RECORD),
)
async def post_memory_supersede(request: HttpRequest, memory_id: MemoryId, body: MemorySupersedeBody):
    return json_response(await db.write(actions.supersede_memory)(WEB_WRITER, memory_id, body.checked), 201)


@router.post(
    "/memory/{memory_id}/retract",
    summary="Retract an active record (a tombstone; nothing is erased)",
    **route({200: MemoryResult}, write=True, body=True, errors=ON_A_RECORD),
)
async def post_memory_retract(request: HttpRequest, memory_id: MemoryId, body: RetractBody):
    return json_response(await db.write(actions.retract_memory)(WEB_WRITER, memory_id, body.checked))


@router.get("/identity", summary="List identity records (compatibility)", **route({200: IdentityPage}, errors=LIST))
async def get_identity(request: HttpRequest, query: Query[IdentityListQuery]):
    return json_response(await db.read(search.list_identity)(query.checked))


@router.post(
    "/identity",
    summary="Remember an identity record about an agent",
    **route({201: IdentityResult}, write=True, body=True, errors=REMEMBER),
)
async def post_identity(request: HttpRequest, body: IdentityWriteBody):
    return json_response(await db.write(identity.remember_identity)(WEB_WRITER, body.checked), 201)


@router.post(
    "/identity/{identity_id}/supersede",
    summary="Write a new version",
    **route({201: IdentityResult}, write=True, body=True, errors=ON_A_RECORD),
)
async def post_identity_supersede(request: HttpRequest, identity_id: IdentityId, body: IdentitySupersedeBody):
    return json_response(await db.write(identity.supersede_identity)(WEB_WRITER, identity_id, body.checked), 201)


@router.post(
    "/identity/{identity_id}/retract",
    summary="Retract an identity record",
    **route({200: IdentityResult}, write=True, body=True, errors=ON_A_RECORD),
)
async def post_identity_retract(request: HttpRequest, identity_id: IdentityId, body: RetractBody):
    return json_response(await db.write(identity.retract_identity)(WEB_WRITER, identity_id, body.checked))


@router.get("/context", summary="The room's context usage in characters", **route({200: ContextUsage}))
async def get_context(request: HttpRequest):
    return json_response(await db.read(usage)())


# A compaction that fails answers 503 with the code its summariser failed with (memory/compaction.py).
@router.post(
    "/context/compact",
    summary="Compact all but the last 12 room messages into the checkpoint summary",
    **route(
        {200: CompactResult}, write=True, body=True, errors={409: ("CLIENT_COMMAND_CONFLICT",), 503: FAILURE_CODES}
    ),
)
async def post_context_compact(request: HttpRequest, body: CompactBody):
    return json_response(await engine.accept_compact(WEB_BINDING_ID, body.checked))


@router.post(
    "/context/reset",
    summary="Move the room's context floor to now (the transcript is kept)",
    **route({200: ResetResult}, write=True, body=True, errors={409: ("CLIENT_COMMAND_CONFLICT",)}),
)
async def post_context_reset(request: HttpRequest, body: ResetBody):
    return json_response(await db.write(engine.accept_reset)(WEB_BINDING_ID, "web", body.checked))

"""``/api/memory``, ``/api/identity`` and ``/api/context`` (PROTOCOL §10.4, §10.5): thin wrappers
over the memory actions, written as the web binding (author ``user:web``, sourceKind ``web``)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from ninja import Router

from groupx_site.core import db
from groupx_site.core.http import json_body
from groupx_site.core.ids import WEB_BINDING_ID
from groupx_site.core.json_response import json_response
from memory import actions, engine, identity, inputs, search
from memory.models import IDENTITY_KINDS
from memory.records import WEB_WRITER
from memory.usage import usage

router = Router(tags=["memory"])


def _json(body: dict, status: int = 200) -> HttpResponse:
    return json_response(body, status)


@router.get("/memory", summary="List or search memory records (newest first, offset cursor)")
async def get_memory(request: HttpRequest):
    return _json(await db.read(search.list_memory)(inputs.check_memory_list(request.GET.dict())))


@router.post("/memory", response={201: dict}, summary="Remember: a room, correlation or agent-core record")
async def post_memory(request: HttpRequest):
    return 201, await db.write(actions.remember_memory)(WEB_WRITER, inputs.check_memory_write(json_body(request)))


@router.post("/memory/{memory_id}/supersede", response={201: dict}, summary="Write a new version of an active record")
async def post_memory_supersede(request: HttpRequest, memory_id: str):
    command = inputs.check_supersede(json_body(request), inputs.WRITABLE_MEMORY_KINDS)
    return 201, await db.write(actions.supersede_memory)(WEB_WRITER, memory_id, command)


@router.post("/memory/{memory_id}/retract", summary="Retract an active record (a tombstone; nothing is erased)")
async def post_memory_retract(request: HttpRequest, memory_id: str):
    return await db.write(actions.retract_memory)(WEB_WRITER, memory_id, inputs.check_retract(json_body(request)))


@router.get("/identity", summary="List identity records (compatibility)")
async def get_identity(request: HttpRequest):
    return _json(await db.read(search.list_identity)(inputs.check_identity_list(request.GET.dict())))


@router.post("/identity", response={201: dict}, summary="Remember an identity record about an agent")
async def post_identity(request: HttpRequest):
    return 201, await db.write(identity.remember_identity)(WEB_WRITER, inputs.check_identity_write(json_body(request)))


@router.post("/identity/{identity_id}/supersede", response={201: dict}, summary="Write a new version")
async def post_identity_supersede(request: HttpRequest, identity_id: str):
    command = inputs.check_supersede(json_body(request), IDENTITY_KINDS)
    return 201, await db.write(identity.supersede_identity)(WEB_WRITER, identity_id, command)


@router.post("/identity/{identity_id}/retract", summary="Retract an identity record")
async def post_identity_retract(request: HttpRequest, identity_id: str):
    return await db.write(identity.retract_identity)(WEB_WRITER, identity_id, inputs.check_retract(json_body(request)))


@router.get("/context", summary="The room's context usage in characters")
async def get_context(request: HttpRequest):
    return _json(await db.read(usage)())


@router.post("/context/compact", summary="Compact all but the last 12 room messages into the checkpoint summary")
async def post_context_compact(request: HttpRequest):
    return _json(await engine.compact_command(WEB_BINDING_ID, json_body(request)))


@router.post("/context/reset", summary="Move the room's context floor to now (the transcript is kept)")
async def post_context_reset(request: HttpRequest):
    return _json(await db.write(engine.reset_context)(WEB_BINDING_ID, "web", json_body(request)))

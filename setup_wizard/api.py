"""``GET/POST /api/setup`` inside a running GroupX (PROTOCOL §10.6).

A save here only rewrites ``groupx.json``: the running sessions and bindings are never hot-swapped,
so the answer always says ``restartRequired`` and the new agents wait for ``groupx restart``.
There is no standalone wizard any more: the first run writes a starter config and serves the room
(docs/DECISIONS.md D26), so this is the only place the setup is edited from a browser.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import HttpRequest, JsonResponse
from ninja import Router

from agents.drivers.base import Timeouts
from assistant import setup_access
from groupx_site.core.contract import route
from rooms.validation import reject_sender_fields, reject_unknown_keys
from setup_wizard import actions, cli_test
from setup_wizard.actions import validate_draft
from setup_wizard.config import load_config
from setup_wizard.schemas import CliTestResult, SetupSaveBody, SetupSaved, SetupSnapshot, TestCliBody

router = Router(tags=["setup"])


@router.get(
    "/setup",
    summary="The config draft, driver detection and whether the runtime is active",
    **route({200: SetupSnapshot}),
)
async def get_setup(request: HttpRequest):
    # Off the event loop on a pool thread: detection runs the CLIs' --version (up to seconds).
    body = await sync_to_async(actions.snapshot, thread_sensitive=False)(
        settings.GROUPX_CONFIG_PATH, runtime_active=True
    )
    return JsonResponse(body, json_dumps_params={"ensure_ascii": False})


@router.post(
    "/setup",
    summary="Save the roster to groupx.json (takes effect after groupx restart)",
    **route({200: SetupSaved}, errors={409: ["CLIENT_COMMAND_CONFLICT"]}, write=True),
)
async def post_setup(request: HttpRequest, body: SetupSaveBody):
    saved = await sync_to_async(actions.save_draft, thread_sensitive=False)(
        settings.GROUPX_CONFIG_PATH, body.checked, revision=body.revision
    )
    return JsonResponse(saved, json_dumps_params={"ensure_ascii": False})


@router.post(
    "/setup/test-cli",
    summary="Run one agent CLI's --version and native handshake, then close it",
    **route({200: CliTestResult}, errors={404: ["UNKNOWN_ACTOR"]}, write=True, body=True),
)
async def post_test_cli(request: HttpRequest, body: TestCliBody):
    t = settings.GROUPX_CONFIG.timeouts
    timeouts = Timeouts(handshake_ms=t.handshakeMs, request_ms=t.requestMs, cancel_ms=t.cancelMs, close_ms=t.closeMs)
    result = await cli_test.probe_cli(settings.GROUPX_CONFIG_PATH, body._checked, timeouts)
    return JsonResponse(result, json_dumps_params={"ensure_ascii": False})


# ---- the room assistant's setup_read / setup_save (FEATURES §13): the same draft and the same save --
def _operator_setup_read() -> dict:
    path = settings.GROUPX_CONFIG_PATH
    return {"configPath": str(path), "config": actions.draft_from_config(load_config(path)), "restartRequired": False}


def _operator_setup_save(payload) -> dict:
    payload = reject_sender_fields(payload)
    reject_unknown_keys(payload, {"config"})
    path = settings.GROUPX_CONFIG_PATH
    return actions.save_draft(path, validate_draft({"config": payload.get("config")}, path.parent))


setup_access.register(_operator_setup_read, _operator_setup_save)

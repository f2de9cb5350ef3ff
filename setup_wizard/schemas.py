"""``/api/setup`` as schemas (PROTOCOL §10.6; docs/DECISIONS.md D34). The draft is the wizard's own
pydantic model (``setup_wizard.actions.Draft``); ``validate_draft`` runs first, so every offending
field is named in ``details.issues`` as before."""

from __future__ import annotations

from typing import Annotated, Any

from django.conf import settings
from pydantic import ConfigDict, Field

from groupx_site.core.contract import Checked
from groupx_site.core.driver_table import DRIVER_NAMES
from rooms.schemas import Response
from setup_wizard import cli_test
from setup_wizard.actions import REVISION_PATTERN, Draft, validate_draft


def _check_save(payload: Any) -> Draft:
    return validate_draft(payload, settings.GROUPX_CONFIG_PATH.parent)


class SetupSaveBody(Checked):
    """The whole roster; the running agents change at ``groupx restart``."""

    model_config = ConfigDict(title="SetupSaveBody")
    check = _check_save

    config: Draft
    # The snapshot's revision; a save from an older snapshot is 409 CLIENT_COMMAND_CONFLICT (D100).
    revision: Annotated[str, Field(pattern=REVISION_PATTERN)] | None = None


class SetupSnapshot(Response):
    configPath: str
    existing: bool
    runtimeActive: bool
    assistantAvailable: bool
    drivers: list[dict[str, Any]]
    driverChoices: Any
    demoAgents: Any
    config: dict[str, Any]
    revision: str | None  # the SHA-256 of groupx.json as read; None when there is no file
    existingConfigError: str | None = None


class SetupSaved(Response):
    saved: bool
    configPath: str
    agentCount: int
    enabledAgentCount: int
    restartRequired: bool
    revision: str


class TestCliBody(Checked):
    """Which CLI to test: a configured agent's command, or a native driver's CLI found on PATH.
    Never a command or path of the request's own."""

    model_config = ConfigDict(
        title="TestCliBody",
        json_schema_extra={
            "examples": [{"driver": "kimi"}, {"agentId": "reviewer"}],
            "oneOf": [{"required": ["agentId"]}, {"required": ["driver"]}],
        },
    )
    check = cli_test.check_body

    agentId: Annotated[str, Field(min_length=1, max_length=64)] = None  # type: ignore[assignment]
    driver: Annotated[str, Field(json_schema_extra={"enum": list(DRIVER_NAMES)})] = None  # type: ignore[assignment]


class CliHandshake(Response):
    ok: bool
    code: str | None = None
    message: str | None = None


class CliTestResult(Response):
    driver: str
    found: bool
    version: str | None
    handshake: CliHandshake

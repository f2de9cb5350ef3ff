"""``/api/setup`` as schemas (PROTOCOL §10.6; docs/DECISIONS.md D34). The draft is the wizard's own
pydantic model (``setup_wizard.actions.Draft``); ``validate_draft`` runs first, so every offending
field is named in ``details.issues`` as before."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from pydantic import ConfigDict

from groupx_site.core.contract import Checked
from rooms.schemas import Response
from setup_wizard.actions import Draft, validate_draft


def _check_save(payload: Any) -> Draft:
    return validate_draft(payload, settings.GROUPX_CONFIG_PATH.parent)


class SetupSaveBody(Checked):
    """The whole roster; the running agents change at ``groupx restart``."""

    model_config = ConfigDict(title="SetupSaveBody")
    check = _check_save

    config: Draft


class SetupSnapshot(Response):
    configPath: str
    existing: bool
    runtimeActive: bool
    assistantAvailable: bool
    drivers: list[dict[str, Any]]
    driverChoices: Any
    demoAgents: Any
    config: dict[str, Any]
    existingConfigError: str | None = None


class SetupSaved(Response):
    saved: bool
    configPath: str
    agentCount: int
    enabledAgentCount: int
    restartRequired: bool

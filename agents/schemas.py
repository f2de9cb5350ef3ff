"""``POST /api/agents/{actorId}/restart`` as schemas (FEATURES §3; docs/DECISIONS.md D34, D41). The
rule stays in ``agents.restart.check_restart``; the model runs it first."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict

from agents.restart import check_restart
from groupx_site.core.contract import Checked
from rooms.schemas import ClientCommandId, Response


class RestartBody(Checked):
    model_config = ConfigDict(title="RestartBody")
    check = check_restart

    clientCommandId: ClientCommandId


class RestartAccepted(Response):
    """The new CLI is started at once; SSE's ``session.*`` events say what happened."""

    actorId: str
    accepted: Literal[True]
    previousInstanceId: str | None = None

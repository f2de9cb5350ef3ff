"""``POST /api/turns/{turnId}/cancel`` as schemas (PROTOCOL §10.3; docs/DECISIONS.md D34). The
rules stay in ``turns.actions.check_cancel_body``; the model runs them first."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict

from groupx_site.core.contract import Checked
from rooms.schemas import ClientCommandId, Response
from turns.actions import check_cancel_body


class CancelBody(Checked):
    model_config = ConfigDict(title="CancelBody")
    check = check_cancel_body

    clientCommandId: ClientCommandId


class CancelAccepted(Response):
    """``accepted`` is false when the Turn had already finished; SSE brings the outcome."""

    turnId: str
    accepted: bool
    status: str
    transport: Literal["structured"]

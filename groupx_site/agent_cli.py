"""``groupx restart-agent NAME``: restart one agent's CLI in the running GroupX of this config
(docs/DECISIONS.md D41). It is the room page's Restart button from a terminal: the same
``POST /api/agents/{actorId}/restart``, sent only to the runtime of this very config path, as the
``stop`` command checks. What happens next (the new instance, an interrupted Turn) is in the room.
"""

from __future__ import annotations

import http.client
import json
import uuid
from pathlib import Path

from groupx_site.console import fail, load_target, say
from groupx_site.port_probe import Target, running_target

REQUEST_TIMEOUT = 15.0


def actor_id_of(name: str) -> str:
    """``kimi`` and ``agent:kimi`` both name the agent ``agent:kimi``."""
    return name if name.startswith("agent:") else f"agent:{name}"


def cmd_restart_agent(path: Path, name: str | None) -> int:
    if not name:
        return fail("restart-agent needs the agent's name, e.g. `groupx restart-agent kimi`.")
    if not path.exists():
        return fail(f"no config at {path}; nothing is running.")
    target = running_target(path) or load_target(path)  # the run file first: the config may not parse (D102)
    if target is None:
        return 1
    found = target.probe_patiently()
    if found.kind != "groupx":
        return fail(f"no GroupX instance is running at {target.origin}; start it with `groupx start`.")
    if found.runtime_key != target.key and found.scope_key != target.scope_key:
        return fail(f"the GroupX on port {target.port} belongs to another groupx.json; nothing was restarted.")
    actor_id = actor_id_of(name)
    status, body = post_restart(target, actor_id)
    if status != 202:
        error = body.get("error", {}) if isinstance(body, dict) else {}
        detail = f"{error.get('code')}: {error.get('message')}" if error else str(body)
        return fail(f"the restart of {actor_id} was refused ({status or 'no answer'}): {detail}")
    previous = body.get("previousInstanceId")
    say(
        f"Restarting {actor_id}"
        + (f" (replacing {previous})" if previous else "")
        + "; its queued Turns wait for the new instance."
    )
    return 0


def post_restart(target: Target, actor_id: str) -> tuple[int, object]:
    conn = http.client.HTTPConnection(target.host, target.port, timeout=REQUEST_TIMEOUT)
    try:
        payload = json.dumps({"clientCommandId": f"cli-restart-{uuid.uuid4()}"})
        conn.request(
            "POST", f"/api/agents/{actor_id}/restart", body=payload, headers={"Content-Type": "application/json"}
        )
        response = conn.getresponse()
        raw = response.read(64 * 1024)
    except (OSError, http.client.HTTPException) as error:
        return 0, str(error)
    finally:
        conn.close()
    try:
        return response.status, json.loads(raw)
    except ValueError:
        return response.status, raw.decode(errors="replace")

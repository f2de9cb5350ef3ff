"""Grow a fake CLI's stored session to a long history, as months of use would leave it.

    python agents/fakes/seed_history.py --state-dir DIR --family codex --session ID --turns 1000

A long session is what a resume must survive (the real ``codex app-server`` answers
``thread/resume`` with every turn unless asked not to; ACP agents replay their history on
``session/load``), and running a thousand real Turns to get one would make a test slow. The
session must exist (one real Turn made it); the seeded turns are added before its own, in the
family's stored shape, so the next process of the fake resumes it through its real code path.
Families: ``codex``, ``claude``, and an ACP flavour (``kimi``, ``hermes``, ``grok``, ``generic``).
Stdlib only.
"""

from __future__ import annotations

import argparse
import time
import uuid
from typing import Any

try:  # imported as agents.fakes.seed_history (tests)
    from ._state import HISTORY, StateStore
except ImportError:  # run as a script: agents/fakes itself is on sys.path
    from _state import HISTORY, StateStore  # type: ignore[no-redef]

FILLER = "Seeded history: an earlier question and its answer, as long as a real reply often is. "


def _words(index: int, chars: int) -> str:
    text = f"[seeded turn {index}] " + FILLER * (chars // len(FILLER) + 1)
    return text[:chars]


def _codex_turn(index: int, chars: int) -> dict[str, Any]:
    at = int(time.time()) - 86_400
    user = {
        "type": "userMessage",
        "id": str(uuid.uuid4()),
        "clientId": None,
        "content": [{"type": "text", "text": _words(index, chars), "text_elements": []}],
    }
    reply = {"type": "agentMessage", "id": str(uuid.uuid4()), "text": _words(index, chars), "phase": "final_answer"}
    turn_id = str(uuid.uuid4())
    return {
        "id": turn_id,
        "rootTurnId": turn_id,
        "items": [user, reply],
        "itemsView": "full",
        "status": "completed",
        "error": None,
        "startedAt": at,
        "completedAt": at,
        "durationMs": 1000,
    }


def seed(state_dir: str, family: str, session_id: str, turns: int, chars: int = 700) -> int:
    """Put ``turns`` turns of ``chars`` characters a side before the session's own history;
    returns how many turns it holds now. Raises LookupError for a session that is not stored."""
    store = StateStore(family, state_dir)
    data = store.load(session_id)
    if data is None:
        raise LookupError(f"no stored {family} session {session_id}")
    data.pop("id", None)
    if family == "codex":
        data["turns"] = [_codex_turn(i, chars) for i in range(turns)] + list(data.get("turns") or [])
        count = len(data["turns"])
    else:
        agent_role = "assistant" if family == "claude" else "agent"
        seeded = [
            entry
            for i in range(turns)
            for entry in ({"role": "user", "text": _words(i, chars)}, {"role": agent_role, "text": _words(i, chars)})
        ]
        data[HISTORY] = seeded + list(data.get(HISTORY) or [])
        count = len(data[HISTORY]) // 2
    StateStore(family, state_dir).save(session_id, data)  # a fresh store: an atomic rewrite
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--family", required=True)
    parser.add_argument("--session", required=True)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--chars", type=int, default=700)
    args = parser.parse_args(argv)
    print(seed(args.state_dir, args.family, args.session, args.turns, args.chars))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A supervision pair the page can show (FEATURES §12): Hermes works, Grok watches it, nudges it,
interrupts it and watches the redone work to its end. Used by the browser test and by
``python -m tests.browser.take_pair_screenshot``.
"""

from __future__ import annotations

import json

TASK = "Make every datetime in auth/ timezone-aware (USE_TZ is on now) and keep the auth tests green."


def mcp(tool: str, **args) -> str:
    return f"mcp tool={tool} args='{json.dumps(args)}'"


NUDGE = "cover tests/test_login.py too: it still builds naive datetimes"
INTERRUPT = "this edits the vendored copy in third_party/auth, not auth/"
SCENARIOS = {
    "hermes": {
        "default_turns": [
            [
                'reason n=2 text="Find every datetime.now() under auth/ and replace it."',
                'tool name=shell title="grep -rn datetime.now third_party/auth" command="grep"',
                'hang text="Replacing datetime.now() in third_party/auth/session.py and "',
            ],
            ['reply text="tests/test_login.py now uses timezone.now()."'],
            ['reply text="Redone in auth/session.py: create_session uses timezone.now(), and the auth tests pass."'],
        ]
    },
    "grok": {
        "default_turn": [
            mcp("watch", until="next_milestone", afterSeq=0, timeoutMs=20_000),
            mcp(
                "steer",
                action="nudge",
                reason=NUDGE,
                clientCommandId="steer-nudge",
                content="When the session code is done, switch tests/test_login.py to timezone.now() as well.",
            ),
            mcp(
                "steer",
                action="interrupt",
                reason=INTERRUPT,
                clientCommandId="steer-interrupt",
                content="Stop: edit auth/session.py, not third_party/. Redo the change there.",
            ),
            mcp("watch", until="terminal", timeoutMs=20_000),
            'reply text="Watched Hermes to the end: the change is in auth/, and the login tests were switched too."',
        ]
    },
}


def pair_up(server) -> dict:
    """POST /api/messages with supervision, as a non-UI client: the 202 body."""
    from tests.agents import send

    return send(server, "agent:hermes", TASK, supervision={"observers": ["agent:grok"], "mode": "live_steer"})

"""Screenshots of the room page in a realistic conversation, for the README and for design review.

    python -m tests.browser.take_screenshots [--out docs/screenshots]

writes room-{light,dark}-{wide,narrow}.png: 1280 px and 390 px wide, light and dark,
agent-memory-light-wide.png (Kimi's memory drawer open) and assistant-panel.png (the room
assistant's side chat after it asked every agent for a status: its operator dispatch and the
agents' replies in the timeline, its summary in the panel). A real server
runs the fake Kimi, Hermes and Grok CLIs. Round one (history) is scripted through each fake's
default turn; the server is then restarted with new scripts for round two, which the four pages
watch live, so the pictures show finished replies, reasoning and tool lines, a reply quote, a
highlighted code block, a list, a link, an agent running a tool, an agent writing, a queued Turn,
public memory in the sidebar and the context meter above the composer.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import uuid
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

from tests.agents import fake_agents, send, wait_terminal
from tests.browser.chromium import CHROMIUM, launch_options
from tests.server import REPO, GroupXServer

ROUND_ONE = {
    "kimi": [
        'reason n=3 text="The traceback says it cannot compare offset-naive and offset-aware datetimes, '
        'so look at where the session expiry is built."',
        'tool name=shell title="pytest -q tests/test_login.py" command="pytest -q tests/test_login.py"',
        'stream n=10 delay_ms=40 text="Found it. `test_login_expires_session` fails because the session expiry '
        "is built from a naive datetime:\\n\\n```python\\nexpires = datetime.now() + timedelta(hours=12)\\n```\\n\\n"
        "Yesterday's merge turned on `USE_TZ = True`, so that value is now compared with an aware one. "
        'Using `timezone.now()` from `django.utils` fixes it."',
    ],
    "hermes": [
        'tool name=read_file title="read auth/session.py" command="auth/session.py"',
        'stream n=6 delay_ms=40 text="I read auth/session.py and agree with Kimi: `create_session` is the only '
        "place left with a naive datetime. Background on why this bites after enabling USE_TZ: "
        'https://docs.djangoproject.com/en/5.2/topics/i18n/timezones/"',
    ],
    "grok": [
        'stream n=5 delay_ms=40 text="Same failure in the CI log of run #482:\\n\\n'
        "- **only** `test_login_expires_session` is red\\n- the rest of the suite passes\\n\\n"
        'I can add a regression test once the fix is in."',
    ],
}

ROUND_TWO = {
    "kimi": [
        'reason n=2 text="Replace datetime.now() with timezone.now() and run the auth tests."',
        'tool name=edit title="edit auth/session.py" command="auth/session.py"',
        'tool name=shell title="pytest -q tests/auth" command="pytest -q tests/auth"',
        'stream n=6 delay_ms=60 text="Done: `create_session` now uses `timezone.now()` and the auth suite is '
        "green.\\n\\n```console\\n$ pytest -q tests/auth\\n.........................................  [100%]\\n"
        '41 passed in 3.12s\\n```"',
    ],
    "grok": [
        'reason n=2 text="The expiry is exactly 12 hours: test one second before and one second after."',
        'stream n=4 delay_ms=80 text="Adding `test_session_expires_at_boundary` next to the login tests, '
        'then running it."',
        'tool name=shell title="pytest -q tests/test_login.py -k expiry" command="pytest" delay_ms=600000',
    ],
    "hermes": [
        'reason n=2 text="Wait for the diff, then check every datetime in auth/."',
        'hang text="While the diff lands I am reading the rest of auth/ for other naive datetimes: '
        'tokens.py looks fine so far, "',
    ],
}

VIEWS = {
    "room-light-wide.png": {"color_scheme": "light", "viewport": {"width": 1280, "height": 1000}},
    "room-dark-wide.png": {"color_scheme": "dark", "viewport": {"width": 1280, "height": 1000}},
    "room-light-narrow.png": {"color_scheme": "light", "viewport": {"width": 390, "height": 844}},
    "room-dark-narrow.png": {"color_scheme": "dark", "viewport": {"width": 390, "height": 844}},
}


def script_agents(workdir: Path, turns: dict[str, list[str]]) -> None:
    """Each fake reads its default turn from <cwd>/.groupx-fake.json when it starts."""
    for name, turn in turns.items():
        (workdir / f"cwd-{name}" / ".groupx-fake.json").write_text(json.dumps({"default_turn": turn}))


def round_one(server: GroupXServer) -> dict:
    accepted = send(
        server,
        "@all",
        "Morning! test_login started failing after yesterday's merge. "
        "Could each of you take a quick look and tell me what you find?",
    )
    terminals = {t["target"]: wait_terminal(server, t["turnId"]) for t in accepted["turns"]}
    return terminals["agent:kimi"]["body"]["responseEventId"]


MEMORY = [
    (
        {"type": "room", "id": "room:main"},
        "decision",
        "All datetimes are timezone-aware (USE_TZ = True); use django.utils.timezone.now(), never datetime.now().",
    ),
    ({"type": "room", "id": "room:main"}, "instruction", "Run the auth tests before saying a fix is done."),
    ({"type": "agent", "id": "agent:kimi"}, "preference", "Keep diffs small: one concern per change."),
]


def remember(server: GroupXServer) -> None:
    for scope, kind, content in MEMORY:
        response = server.post(
            "/api/memory", {"clientCommandId": str(uuid.uuid4()), "scope": scope, "kind": kind, "content": content}
        )
        assert response.status_code == 201, response.text


def take(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="groupx-shots-"))
    agents = fake_agents(workdir, "kimi", "hermes", "grok")
    script_agents(workdir, ROUND_ONE)
    server = GroupXServer(workdir, {"agents": agents, "timeouts": {"handshakeMs": 600000, "closeMs": 300}})
    server.start()
    try:
        kimi_reply = round_one(server)
        remember(server)
        script_agents(workdir, ROUND_TWO)
        server.restart()
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(**launch_options())
            pages = {}
            for name, view in VIEWS.items():
                context = browser.new_context(**view)
                page = context.new_page()
                page.goto(server.url("/"))
                expect(page.locator("body[data-ready=true]")).to_be_attached(timeout=15_000)
                pages[name] = page

            fix = send(
                server,
                "agent:kimi",
                "Good catch. Please make that change and run the auth tests.",
                replyToEventId=kimi_reply,
            )
            wait_terminal(server, fix["turns"][0]["turnId"])
            send(
                server,
                ["agent:grok", "agent:hermes"],
                "Grok, please add a regression test for the 12-hour boundary. Hermes, review Kimi's diff.",
            )
            send(server, "agent:grok", "After that, check that the remember-me cookie uses the same expiry.")

            for name, page in pages.items():
                grok = page.locator('article.is-live[data-actor-id="agent:grok"]')
                expect(grok.locator('.tool[data-status="running"]')).to_be_visible(timeout=15_000)
                expect(page.locator('article.is-live[data-actor-id="agent:hermes"] .stream-text')).not_to_be_empty()
                expect(page.locator('.turn-chip[data-status="queued"]')).to_have_count(1)
                page.wait_for_timeout(300)  # let the last scroll-to-bottom frame land
                page.screenshot(path=str(out / name), animations="disabled")
                print(f"wrote {out / name}")

            page = pages["room-light-wide.png"]
            page.get_by_role("button", name="Kimi's memory").click()
            expect(page.locator("#agent-core .mem-item")).to_have_count(1)
            page.wait_for_timeout(300)
            page.screenshot(path=str(out / "agent-memory-light-wide.png"), animations="disabled")
            print(f"wrote {out / 'agent-memory-light-wide.png'}")
            browser.close()
    finally:
        server.stop()


ASSISTANT_ASK = {
    "to": ["agent:kimi", "agent:hermes", "agent:grok"],
    "clientCommandId": "shot-status",
    "content": "Quick status check: one line on what you are working on and whether anything blocks you.",
}
# The assistant's brain (the fake Claude CLI) asks through /mcp/operator, then sums up; the fake
# writes the tool's result (mcp:worker_ask:ok:<eventId>) as its first line.
ASSISTANT_TURN = [
    f"mcp tool=worker_ask args='{json.dumps(ASSISTANT_ASK)}'",
    'stream n=6 delay_ms=40 text="\n\nAll three answered:\n\n- **Kimi** fixed the naive datetime in '
    "`create_session`; the auth suite is green.\n- **Hermes** is reviewing that diff, nothing found so far.\n"
    '- **Grok** is adding the 12-hour boundary test.\n\nNothing is blocked."',
]
STATUS_REPLIES = {
    "kimi": ['stream n=3 delay_ms=30 text="Fixed `create_session` (timezone.now()); auth suite green. Not blocked."'],
    "hermes": ['stream n=3 delay_ms=30 text="Reviewing Kimi\'s diff in auth/session.py: looks right so far."'],
    "grok": ['stream n=3 delay_ms=30 text="Writing test_session_expires_at_boundary. Not blocked."'],
}


def take_assistant(out: Path) -> None:
    """assistant-panel.png: a person asks the assistant for a status; it dispatches, waits, answers."""
    from tests.assistant_room import assistant_config, assistant_room

    workdir = Path(tempfile.mkdtemp(prefix="groupx-shots-assistant-"))
    for name, turn in STATUS_REPLIES.items():
        (workdir / f"cwd-{name}").mkdir()
        (workdir / f"cwd-{name}" / ".groupx-fake.json").write_text(json.dumps({"default_turn": turn}))
    assistant = assistant_config(workdir, name="Room assistant")
    (Path(assistant["brain"]["cwd"]) / ".groupx-fake.json").write_text(json.dumps({"default_turn": ASSISTANT_TURN}))
    server = assistant_room(
        workdir, "kimi", "hermes", "grok", assistant=assistant, timeouts={"handshakeMs": 600000, "closeMs": 300}
    )
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(**launch_options())
            page = browser.new_context(color_scheme="light", viewport={"width": 1280, "height": 900}).new_page()
            page.goto(server.url("/"))
            expect(page.locator("body[data-ready=true]")).to_be_attached(timeout=15_000)
            box = page.get_by_label("Message to the assistant")
            box.fill("Ask every agent for a status and summarise.")
            box.press("Enter")
            dispatch = page.locator('#durable .dispatch[data-type="operator.dispatch"]')
            expect(dispatch.locator('.turn-chip[data-status="completed"]')).to_have_count(3, timeout=60_000)
            expect(page.locator(".assistant-msg--assistant", has_text="Nothing is blocked")).to_be_visible(
                timeout=60_000
            )
            page.wait_for_timeout(300)  # let the last scroll-to-bottom frame land
            page.screenshot(path=str(out / "assistant-panel.png"), animations="disabled")
            print(f"wrote {out / 'assistant-panel.png'}")
            browser.close()
    finally:
        server.stop()


def run(take_into, doc: str, argv: list[str] | None = None) -> int:
    """The command line of a screenshot script: ``--out``, then ``take_into(out)``."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    args = parser.parse_args(argv)
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is missing: apt-get install chromium", file=sys.stderr)
        return 2
    take_into(args.out)
    return 0


def take_all(out: Path) -> None:
    take(out)
    take_assistant(out)


def main(argv: list[str] | None = None) -> int:
    return run(take_all, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
